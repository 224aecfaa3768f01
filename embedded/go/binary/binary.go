// Package binary embeds the static nvke-cert-runbook executable and its
// filled-in manifest: the only package that embeds the runbook, so a
// controller that imports only documents, executor or sshtransport never
// links the binary (megabytes).
//
// The binary and manifest.json are placed beside this file by prepare.sh
// (from target/static/, built by packaging/build-static) and are not
// committed: the package does not build until they are there, unless it is
// built with the tag certrunbook_nobinary (embed_stub.go), where Bytes and
// Embedded are nil and Verify, Manifest and WriteBinary return ErrNoBinary.
// Embedded is what an executor.Executor runs (certrunbook.New wires it).
//
// Standard library only.
package binary

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/internal/artifact"
)

// ErrNoBinary is what Verify, WriteBinary and Manifest return when the
// package was built with the tag certrunbook_nobinary (the same value as
// executor.ErrNoBinary).
var ErrNoBinary = artifact.ErrNoBinary

// Bytes returns the embedded static executable (linux/amd64), nil when
// built with the tag certrunbook_nobinary. Do not modify the returned slice.
func Bytes() []byte { return binary }

// Embedded is the embedded binary as an executor.Executor's Binary (nil
// when built with the tag certrunbook_nobinary).
func Embedded() *artifact.Binary { return artifact.New(binary) }

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
	if m.ContractVersion != documents.ContractVersion {
		return fmt.Errorf("embedded binary honours contract %q, this package %q", m.ContractVersion, documents.ContractVersion)
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
	path := filepath.Join(dir, documents.BinaryName)
	tmp, err := os.CreateTemp(dir, "."+documents.BinaryName+".*")
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
