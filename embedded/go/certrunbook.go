// Package certrunbook embeds the static nvke-cert-runbook binary and
// describes its contract for a Go fleet controller: the binary itself (to
// push to a control-plane node and exec as root), its sha256 and version,
// argument lists for each mode, and typed decoders for every JSON document
// the binary prints and every JSON file it writes.
//
// The binary and manifest.json are placed beside this file by prepare.sh
// (from target/static/, built by packaging/build-static) and are not
// committed: the package does not build until they are there, unless it is
// built with the tag certrunbook_nobinary (embed_stub.go), where Binary is
// nil and Verify, WriteBinary and Executor.Push return ErrNoBinary; the
// contract's rules (types, decoders, argument builders, the Executor
// against a test Transport) work either way.
//
// The Executor (executor.go) runs the binary on a node through a Transport:
// the check and its Plan (which executor, legacy fallback), a V2 renewal
// with receipt verification, the fencing check, and the cleanup that
// decides whether the cluster mutation lock is released or retained
// (outcome.go).
//
// Standard library only.
package certrunbook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinaryName is the executable's name.
const BinaryName = "nvke-cert-runbook"

// ContractVersion is the contract these types and argument builders
// describe; the embedded binary must report the same.
const ContractVersion = "nvke-cert-runbook/contract/v1"

// Exit codes (SPEC section 7).
const (
	ExitOK              = 0 // renewed or unchanged (or a replayed success); status: confirmed, or a clean node; check: decided
	ExitFailed          = 1 // failed, cancelled, or refused, all four manifests active; status: unconfirmed or not clean; check: failed
	ExitUsage           = 2 // usage error; nothing written
	ExitLockTimeout     = 3 // lock not acquired in time; nothing written
	ExitOperatorMustAct = 4 // a manifest is still staged or missing: an operator must act
	ExitFenced          = 5 // replay of an abandoned or superseded receipt: this attempt was fenced
)

// ErrNoBinary is what Verify, WriteBinary, Manifest and Executor.Push return
// when the package was built with the tag certrunbook_nobinary.
var ErrNoBinary = errors.New("nvke-cert-runbook is not embedded (built with -tags certrunbook_nobinary)")

// Binary returns the embedded static executable (linux/amd64), nil when
// built with the tag certrunbook_nobinary. Do not modify the returned slice.
func Binary() []byte { return binary }

// Size is the embedded binary's size in bytes.
func Size() int { return len(binary) }

// SHA256 is the lowercase hex sha256 of the embedded binary ("" without one).
func SHA256() string {
	if binary == nil {
		return ""
	}
	sum := sha256.Sum256(binary)
	return hex.EncodeToString(sum[:])
}

// Manifest returns the manifest prepared with the binary (embedded/manifest.json
// filled in by embedded/gen-manifest).
func Manifest() (*EmbeddedManifest, error) {
	if manifestJSON == nil {
		return nil, ErrNoBinary
	}
	var m EmbeddedManifest
	dec := json.NewDecoder(bytes.NewReader(manifestJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("embedded manifest.json: %w", err)
	}
	return &m, nil
}

// Version is the embedded binary's runbookVersion (as in every JSON document).
func Version() string {
	m, err := Manifest()
	if err != nil {
		return ""
	}
	return m.RunbookVersion
}

// GitCommit is the commit the embedded binary was built from.
func GitCommit() string {
	m, err := Manifest()
	if err != nil || m.GitCommit == nil {
		return ""
	}
	return *m.GitCommit
}

// Verify checks that the embedded binary is the one the manifest describes
// and that it honours this package's contract version.
func Verify() error {
	m, err := Manifest()
	if err != nil {
		return err
	}
	if m.Binary.SHA256 == nil || *m.Binary.SHA256 != SHA256() {
		return fmt.Errorf("embedded binary sha256 %s does not match the manifest (%v)", SHA256(), m.Binary.SHA256)
	}
	if m.Binary.Size == nil || *m.Binary.Size != int64(Size()) {
		return fmt.Errorf("embedded binary size %d does not match the manifest (%v)", Size(), m.Binary.Size)
	}
	if m.ContractVersion != ContractVersion {
		return fmt.Errorf("embedded binary honours contract %q, this package %q", m.ContractVersion, ContractVersion)
	}
	return nil
}

// WriteBinary writes the embedded binary to dir/nvke-cert-runbook (mode
// 0755, replacing a previous copy through a temporary file) and returns
// its path.
func WriteBinary(dir string) (string, error) {
	if binary == nil {
		return "", ErrNoBinary
	}
	path := filepath.Join(dir, BinaryName)
	tmp, err := os.CreateTemp(dir, "."+BinaryName+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(binary); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// EmbeddedManifest is embedded/manifest.json, filled in for one binary.
type EmbeddedManifest struct {
	ManifestFormat  string            `json:"manifestFormat"`
	Binary          ManifestBinary    `json:"binary"`
	RunbookVersion  string            `json:"runbookVersion"`
	GitCommit       *string           `json:"gitCommit"`
	ContractVersion string            `json:"contractVersion"`
	GlobalOptions   []string          `json:"globalOptions"`
	Modes           []ManifestMode    `json:"modes"`
	UsageErrorOut   string            `json:"usageErrorOutput"`
	ExitCodes       []ManifestExit    `json:"exitCodes"`
	Files           []ManifestFile    `json:"files"`
	SchemaDir       string            `json:"schemaDir"` // in the source tree
	Schemas         map[string]string `json:"schemas"`
}

// ManifestBinary describes the static executable.
type ManifestBinary struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Static bool    `json:"static"`
	SHA256 *string `json:"sha256"`
	Size   *int64  `json:"size"`
}

// ManifestMode is one mode: its arguments, options, output document and
// possible exit codes.
type ManifestMode struct {
	Name      string   `json:"name"`
	Args      []string `json:"args"`
	Options   []string `json:"options"`
	Output    string   `json:"output"`
	ExitCodes []int    `json:"exitCodes"`
}

// ManifestExit is one exit code.
type ManifestExit struct {
	Code    int    `json:"code"`
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// ManifestFile is a JSON file the binary reads or writes on the node.
type ManifestFile struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Access string `json:"access"`
	Note   string `json:"note,omitempty"`
}
