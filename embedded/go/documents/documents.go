package documents

// Typed mirrors of the JSON documents (embedded/schema/*.schema.json; the
// Rust types in src/contract/ are the source of those schemas). Nullable
// values are pointers; fields that only some shapes carry are pointers or
// slices as well.
//
// Two kinds of decoder:
//   - the documents the embedded binary prints (DecodeRenew, DecodeCheck,
//     DecodeStatus, DecodeFence, DecodeUsageError, DecodeVersion,
//     DecodeHelp, Decode) are strict: an unknown field at any depth is an
//     error, so drift between this package and the binary it embeds fails
//     loudly;
//   - the files on the node (DecodeReceipt, DecodePhaseV2, DecodeLockOwner,
//     DecodeAgentState) are read across versions: receipts are never
//     deleted, and a rolled-back older controller must still read a newer
//     runbook's receipt. They allow unknown fields but still check the
//     format and the required fields.
//
// Every decoder returns a value or an error, never both.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Kind is which document a printed JSON object is.
type Kind string

const (
	KindRenew      Kind = "renew" // renew and legacy-v1 (result, replay, early failure)
	KindCheck      Kind = "check"
	KindStatus     Kind = "status" // operator view
	KindFence      Kind = "fence"
	KindUsageError Kind = "usage-error" // also an unusable --root (outcome "failed")
	KindVersion    Kind = "version"
	KindHelp       Kind = "help"
)

// ManifestLocations: where each of the four manifests is ("active",
// "staged", "both", "missing"). Empty strings: the document had `{}` (a
// renewal that stopped before it looked at the node).
type ManifestLocations struct {
	Etcd                  Location `json:"etcd"`
	KubeAPIServer         Location `json:"kube-apiserver"`
	KubeControllerManager Location `json:"kube-controller-manager"`
	KubeScheduler         Location `json:"kube-scheduler"`
}

// ResumedFrom is the operation (or legacy work, OperationID nil) a renewal took over.
type ResumedFrom struct {
	OperationID *string     `json:"operationID"`
	Format      PhaseFormat `json:"format"` // "nvke-cert-runbook/phase/v2" or "legacy-five-line"
}

// Receipt is state/completed/<ID>.json.
type Receipt struct {
	Format          string            `json:"format"` // "nvke-cert-runbook/receipt/v1"
	OperationID     string            `json:"operationID"`
	Outcome         Outcome           `json:"outcome"`
	Phase           Phase             `json:"phase"`
	Message         string            `json:"message"`
	FailedComponent *Component        `json:"failedComponent"`
	Manifests       ManifestLocations `json:"manifests"`
	FinishedAt      string            `json:"finishedAt"`
	RunbookVersion  string            `json:"runbookVersion"`
	CASHA256        map[string]string `json:"caSHA256"` // keys among CAKeys
	// Restarts (v1.2): the restarts the run made, in order; absent when
	// it made none and in v1.1 receipts.
	Restarts []Restart `json:"restarts,omitempty"`
	// Recovery (v1.2, SPEC 11): a --recover-expired run; absent otherwise.
	Recovery bool `json:"recovery,omitempty"`
	// HealthAtEnd (v1.2, SPEC 11): a recovery's health as observed at its
	// end (quorum and /readyz reported, not required); absent otherwise.
	HealthAtEnd *string `json:"healthAtEnd,omitempty"`
	// Certificates (v1.3, SPEC 4 step 8 "Leaf by leaf"): every leaf the
	// operation's renewal proved renewed, in SPEC order; absent when no
	// renewal of the operation's was proven, and in older receipts.
	Certificates []LeafRenewal `json:"certificates,omitempty"`
}

// LeafRenewal is one leaf as its renewal was proven (v1.3): a new serial
// (lowercase hex), and its end before and after. SerialBefore and
// NotAfterBefore are nil for a leaf that was not there before kubeadm ran.
type LeafRenewal struct {
	Name           CertificateName `json:"name"`
	SerialBefore   *string         `json:"serialBefore"`
	SerialAfter    string          `json:"serialAfter"`
	NotAfterBefore *string         `json:"notAfterBefore"`
	NotAfterAfter  string          `json:"notAfterAfter"`
}

// PhaseV2 is the V2 phase file, state/phase.
type PhaseV2 struct {
	Format        PhaseFormat       `json:"format"` // "nvke-cert-runbook/phase/v2"
	OperationID   string            `json:"operationID"`
	State         PhaseState        `json:"state"` // renewing, restart_pending, done
	NextComponent *Component        `json:"nextComponent"`
	CASHA256      map[string]string `json:"caSHA256"`
	Force         bool              `json:"force"`
	ThresholdDays int               `json:"thresholdDays"`
	StartedAt     string            `json:"startedAt"`
	UpdatedAt     string            `json:"updatedAt"`
	ResumedFrom   *ResumedFrom      `json:"resumedFrom"`
	// Recovery (v1.2, SPEC 11): the work is a --recover-expired run's;
	// absent otherwise. v1.3: only --recover-expired resumes it as a
	// recovery; a plain renewal refuses it while a leaf is expired, else
	// finishes it as a renewal.
	Recovery bool `json:"recovery,omitempty"`
}

// LockOwner is state/owner (and the lock holder in check and status).
type LockOwner struct {
	PID         uint32    `json:"pid"`
	OperationID *string   `json:"operationID"`
	Mode        OwnerMode `json:"mode"` // renew, legacy-v1, status-fence
	StartedAt   string    `json:"startedAt"`
	BootID      string    `json:"bootID"`
}

// AgentStateFile is the node agent's state file (read by the runbook, never
// written). It is an open document: unknown keys are allowed.
type AgentStateFile struct {
	K8sCertRenewalState struct {
		Phase       AgentPhase `json:"phase"`
		OperationID *string    `json:"operationID,omitempty"`
	} `json:"k8sCertRenewalState"`
}

// CertificateChange is one leaf's expiry before and after a renewal.
type CertificateChange struct {
	Name           CertificateName `json:"name"`
	Path           string          `json:"path"`
	NotAfterBefore *string         `json:"notAfterBefore"`
	NotAfterAfter  *string         `json:"notAfterAfter"`
	DaysLeftBefore *int64          `json:"daysLeftBefore"`
	DaysLeftAfter  *int64          `json:"daysLeftAfter"`
	// SerialBefore, SerialAfter (v1.3): lowercase hex; nil when not read
	// (after: only after a "renewed" outcome).
	SerialBefore *string `json:"serialBefore"`
	SerialAfter  *string `json:"serialAfter"`
}

// Restart is one component's restart.
type Restart struct {
	Component      Component `json:"component"`
	OldContainerID string    `json:"oldContainerID"`
	NewContainerID string    `json:"newContainerID"`
	StopMs         uint64    `json:"stopMs"`
	HealthyMs      uint64    `json:"healthyMs"`
	TotalMs        uint64    `json:"totalMs"`
	// APIUnavailableMs (v1.2): the longest run of failed /readyz probes of
	// the node's kube-apiserver, probed in-process every 200 ms while this
	// component restarted (from a failed probe to the next answered one);
	// nil when it was not measured.
	APIUnavailableMs *uint64 `json:"apiUnavailableMs"`
}

// EtcdVoters is the etcd membership the health gate saw.
type EtcdVoters struct {
	Voters        int `json:"voters"`
	HealthyVoters int `json:"healthyVoters"`
}

// RuntimeEndpoint is the container runtime endpoint a renewal gave crictl,
// and where it came from: flag, kubeadm-flags, kubelet-config or crictl
// (none given; crictl's own configuration).
type RuntimeEndpoint struct {
	Endpoint *string        `json:"endpoint"`
	Source   EndpointSource `json:"source"`
	Warning  *string        `json:"warning,omitempty"`
}

// RenewResult is what `--operation-id ID` and `--legacy-v1` print. Three
// shapes share it:
//   - a run (Replayed false, Etcd key present): every field but Receipt;
//   - a replay of an existing receipt (Replayed true): Receipt set, no Etcd,
//     empty Certificates and Restarts;
//   - an early failure (phase "lock", "receipt" or "phase-file": state dir, lock timeout
//     with exit 3, cancelled wait, malformed own receipt): no
//     FailedComponent, Etcd or Receipt; CASHA256 is `{}`; Manifests says
//     where the four are (a read-only look, issue 14).
type RenewResult struct {
	Mode            Mode                `json:"mode"` // renew or legacy-v1
	RunbookVersion  string              `json:"runbookVersion"`
	OperationID     *string             `json:"operationID"`
	Outcome         Outcome             `json:"outcome"`
	Phase           Phase               `json:"phase"`
	Message         string              `json:"message"`
	FailedComponent *Component          `json:"failedComponent,omitempty"`
	Replayed        bool                `json:"replayed"`
	ReceiptWritten  bool                `json:"receiptWritten"` // this run wrote its receipt; never a success without it
	Resigned        bool                `json:"resigned"`       // this run re-signed the certificates (kubeadm ran and was kept)
	RuntimeEndpoint *RuntimeEndpoint    `json:"runtimeEndpoint,omitempty"`
	ResumedFrom     *ResumedFrom        `json:"resumedFrom"`
	Certificates    []CertificateChange `json:"certificates"`
	CASHA256        map[string]string   `json:"caSHA256"`
	Manifests       ManifestLocations   `json:"manifests"`
	Restarts        []Restart           `json:"restarts"`
	Etcd            *EtcdVoters         `json:"etcd,omitempty"`
	Recovery        bool                `json:"recovery,omitempty"`    // v1.2 (SPEC 11): a recovery
	HealthAtEnd     *string             `json:"healthAtEnd,omitempty"` // v1.2 (SPEC 11): a recovery's health at its end
	Receipt         *Receipt            `json:"receipt,omitempty"`
	DurationMs      uint64              `json:"durationMs"`
	ExitCode        int                 `json:"exitCode"` // the process's exit code (v1.1)
}

// Success reports whether the outcome is renewed or unchanged.
func (r *RenewResult) Success() bool {
	return r.Outcome.Success()
}

// ManifestView is one manifest as the read-only modes find it.
type ManifestView struct {
	Location      Location `json:"location"`
	Active        bool     `json:"active"`
	RunbookStaged bool     `json:"runbookStaged"`
	AgentStaged   bool     `json:"agentStaged"`
	Error         *string  `json:"error,omitempty"`
}

// ManifestViews are the four manifests.
type ManifestViews struct {
	Etcd                  ManifestView `json:"etcd"`
	KubeAPIServer         ManifestView `json:"kube-apiserver"`
	KubeControllerManager ManifestView `json:"kube-controller-manager"`
	KubeScheduler         ManifestView `json:"kube-scheduler"`
}

// StagingView is a staging directory's content.
type StagingView struct {
	Path       string   `json:"path"`
	Exists     bool     `json:"exists"`
	Entries    []string `json:"entries"`
	Unexpected []string `json:"unexpected"`
	Error      *string  `json:"error,omitempty"`
}

// StagingViews are both staging directories.
type StagingViews struct {
	Runbook StagingView `json:"runbook"`
	Agent   StagingView `json:"agent"`
}

// Stray is a file kubelet would run as an extra pod.
type Stray struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// CertificateView is a leaf certificate as read.
type CertificateView struct {
	Name            CertificateName   `json:"name"`
	Path            string            `json:"path"`
	Status          CertificateStatus `json:"status"` // ok, skipped, error
	CA              CAName            `json:"ca"`     // ca, etcd-ca, front-proxy-ca
	Subject         *string           `json:"subject,omitempty"`
	KeyAlgorithm    *string           `json:"keyAlgorithm,omitempty"`
	NotAfter        *string           `json:"notAfter"`
	DaysLeft        *int64            `json:"daysLeft"`
	WithinThreshold *bool             `json:"withinThreshold"`
	Severity        *Expiry           `json:"severity"` // v1.2; nil when unreadable
	ChainsToCA      *bool             `json:"chainsToCA"`
	Error           *string           `json:"error,omitempty"`
}

// Expiry is how soon a certificate expires (v1.2, SPEC 10).
type Expiry string

const (
	ExpiryOK      Expiry = "ok"      // not within the threshold
	ExpiryDue     Expiry = "due"     // within the threshold: due for renewal
	ExpiryExpired Expiry = "expired" // past its notAfter: ACTION NEEDED
)

// Valid reports whether x is one of the values of Expiry.
func (x Expiry) Valid() bool { return x == ExpiryOK || x == ExpiryDue || x == ExpiryExpired }

// KubeletCertificateView is one of the kubelet's own certificates (v1.2):
// listed with its expiry and whether the kubelet rotates it, never renewed
// by the runbook.
type KubeletCertificateView struct {
	Role     KubeletRole `json:"role"` // client, serving
	Path     string      `json:"path"`
	NotAfter *string     `json:"notAfter"`
	DaysLeft *int64      `json:"daysLeft"`
	Severity *Expiry     `json:"severity"`
	Rotates  *bool       `json:"rotates"`
	Error    *string     `json:"error,omitempty"`
}

// LiveView is the live node (v1.2, SPEC 10): one observation of the
// runtime and the components, judged as the renewal's health gate judges.
type LiveView struct {
	ObservedAt string        `json:"observedAt"`
	BudgetMs   uint64        `json:"budgetMs"` // --probe-timeout
	TookMs     uint64        `json:"tookMs"`
	Runtime    *string       `json:"runtime"` // why no container could be listed
	Pods       []LivePodView `json:"pods"`
}

// LivePodView is one static pod, live: the four components, then other
// static pods that mount a file kubeadm renews (kube-vip).
type LivePodView struct {
	Name      string             `json:"name"`
	State     string             `json:"state"` // healthy, or the worst finding's kind
	Summary   string             `json:"summary"`
	Container *LiveContainerView `json:"container"`
	Health    *string            `json:"health"`
	Served    []LiveServedView   `json:"served"`
	Findings  []LiveFindingView  `json:"findings"`
	// Logs is the command that shows its log (crictl logs --tail 40 of the
	// container that says why), when a container is known and crictl was
	// found (v1.3).
	Logs *string `json:"logs,omitempty"`
}

// LiveContainerView is a static pod's container as the runtime lists it.
type LiveContainerView struct {
	ID         string  `json:"id"`
	Running    bool    `json:"running"`
	Since      *string `json:"since"`
	ExitCode   *int32  `json:"exitCode"`
	FinishedAt *string `json:"finishedAt"`
	Restarts   uint32  `json:"restarts"`
}

// LiveServedView is what a serving port presents, against its file.
type LiveServedView struct {
	Port       uint16  `json:"port"`
	File       string  `json:"file"`
	Served     *string `json:"served"` // current, other, expired; nil: not checked
	NotChecked *string `json:"notChecked,omitempty"`
}

// LiveFindingView is what is wrong with one pod: action_needed exits 4,
// not_clean 1.
type LiveFindingView struct {
	Kind       string        `json:"kind"`
	Weight     FindingWeight `json:"weight"` // action_needed, not_clean
	BlocksGate bool          `json:"blocksGate"`
	Message    string        `json:"message"`
}

// CAView is a CA as read.
type CAView struct {
	Name            CAName  `json:"name"`
	Path            string  `json:"path"`
	SHA256          *string `json:"sha256"`
	NotAfter        *string `json:"notAfter"`
	DaysLeft        *int64  `json:"daysLeft"`
	WithinThreshold *bool   `json:"withinThreshold"`
	Error           *string `json:"error,omitempty"`
}

// OwnerView is what state/owner says: a LockOwner (PID set), Raw text, or
// an Error.
type OwnerView struct {
	PID         *uint32    `json:"pid,omitempty"`
	OperationID *string    `json:"operationID,omitempty"`
	Mode        *OwnerMode `json:"mode,omitempty"`
	StartedAt   *string    `json:"startedAt,omitempty"`
	BootID      *string    `json:"bootID,omitempty"`
	Raw         *string    `json:"raw,omitempty"`
	Error       *string    `json:"error,omitempty"`
}

// LockHolder is the process that really holds the lock, from /proc/locks
// (v1.1). PID is null when the holder is unknown or not visible (Error).
type LockHolder struct {
	PID                *uint32 `json:"pid"`
	Command            *string `json:"command"`
	CommandLine        *string `json:"commandLine"`
	OwnerRecordMatches bool    `json:"ownerRecordMatches"` // state/owner names it on this boot
	Error              *string `json:"error,omitempty"`
}

// LockView is the renewal lock: its real holder while held, and the owner
// record (state/owner) whether or not it is held.
type LockView struct {
	Path      string      `json:"path"`
	State     LockState   `json:"state"` // absent, free, held, error
	Held      bool        `json:"held"`
	Holder    *LockHolder `json:"holder"`
	LastOwner *OwnerView  `json:"lastOwner"`
	Error     *string     `json:"error,omitempty"`
}

// ReceiptLookup is a receipt, or `{"malformed": true, "error": ...}`.
type ReceiptLookup struct {
	Receipt
	Malformed bool   `json:"malformed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// PhaseFileView is the phase file judged as a renewal would judge it.
type PhaseFileView struct {
	Path          string          `json:"path"`
	Status        PhaseFileStatus `json:"status"` // absent, present, malformed
	Intent        PhaseIntent     `json:"intent"` // absent, done, done-by-receipt, pending, malformed
	Pending       bool            `json:"pending"`
	Format        *PhaseFormat    `json:"format"`
	State         *PhaseState     `json:"state"`
	NextComponent *Component      `json:"nextComponent"`
	OperationID   *string         `json:"operationID"`
	// V2 only.
	StartedAt     *string        `json:"startedAt,omitempty"`
	UpdatedAt     *string        `json:"updatedAt,omitempty"`
	Force         *bool          `json:"force,omitempty"`
	ThresholdDays *int           `json:"thresholdDays,omitempty"`
	Receipt       *ReceiptLookup `json:"receipt,omitempty"`
	// V2: all three; legacy: ca.crt only.
	CASHA256 map[string]string `json:"caSHA256,omitempty"`
	// Legacy only.
	Started *uint64 `json:"started,omitempty"`
	PID     *uint32 `json:"pid,omitempty"`
	Error   *string `json:"error,omitempty"`
}

// AgentStateView is the node agent's intent.
type AgentStateView struct {
	Path        string      `json:"path"`
	State       AgentState  `json:"state"`
	Phase       *AgentPhase `json:"phase,omitempty"`
	OperationID *string     `json:"operationID,omitempty"`
	Reason      *string     `json:"reason,omitempty"`
}

// CheckResult is what `--check` prints.
type CheckResult struct {
	Mode                   Mode                     `json:"mode"`
	RunbookVersion         string                   `json:"runbookVersion"`
	OperationID            *string                  `json:"operationID"` // always null
	Outcome                Decision                 `json:"outcome"`     // = Decision
	Decision               Decision                 `json:"decision"`
	Executors              []ExecutorKind           `json:"executors"` // in the order they must run
	LegacyFallback         bool                     `json:"legacyFallback"`
	Failure                *CheckFailure            `json:"failure"` // busy, state, phase-file, manifests, agent-state, pki
	Reasons                []string                 `json:"reasons"`
	Warnings               []string                 `json:"warnings"`
	Message                string                   `json:"message"`
	Force                  bool                     `json:"force"`
	ThresholdDays          int                      `json:"thresholdDays"`
	Now                    string                   `json:"now"`
	AgentState             AgentStateView           `json:"agentState"`
	PhaseFile              PhaseFileView            `json:"phaseFile"`
	Lock                   LockView                 `json:"lock"`
	Manifests              ManifestViews            `json:"manifests"`
	Staging                StagingViews             `json:"staging"`
	StrayManifests         []Stray                  `json:"strayManifests"`
	Certificates           []CertificateView        `json:"certificates"`
	CertificateAuthorities []CAView                 `json:"certificateAuthorities"`
	KubeletCertificates    []KubeletCertificateView `json:"kubeletCertificates"` // v1.2
	Live                   *LiveView                `json:"live"`                // v1.2
	CASHA256               map[string]string        `json:"caSHA256"`
	DurationMs             uint64                   `json:"durationMs"`
	ExitCode               int                      `json:"exitCode"` // v1.1
}

// ReceiptSummary is one of the most recent receipts.
type ReceiptSummary struct {
	OperationID string   `json:"operationID"`
	Outcome     *Outcome `json:"outcome"`
	Phase       *Phase   `json:"phase"`
	FinishedAt  *string  `json:"finishedAt"`
	Message     *string  `json:"message"`
	Error       *string  `json:"error,omitempty"`
	// Recovery and HealthAtEnd (v1.2, SPEC 11): a recovery's receipt and
	// the health seen at its end; absent otherwise.
	Recovery    bool    `json:"recovery,omitempty"`
	HealthAtEnd *string `json:"healthAtEnd,omitempty"`
	// Certificates (v1.3): the leaves the receipt lists as proven
	// renewed; absent when it lists none.
	Certificates []LeafRenewal `json:"certificates,omitempty"`
}

// FencingPlan is what a fencing check would do now.
type FencingPlan struct {
	Action      FencingAction `json:"action"` // confirm, abandon, refuse
	Termination Termination   `json:"termination"`
	Restore     []Component   `json:"restore"` // what it would put back (every action, v1.1; never omitted)
	Reason      *string       `json:"reason,omitempty"`
}

// StatusResult is what `--status-only [--operation-id ID]` prints (the
// operator view; Executor.Status returns it). Not to be confused with
// Status, a Result's succeeded or failed-lock-released/retained.
type StatusResult struct {
	Mode                   Mode                     `json:"mode"`
	RunbookVersion         string                   `json:"runbookVersion"`
	OperationID            *string                  `json:"operationID"`
	Fence                  bool                     `json:"fence"`   // false
	Outcome                StatusOutcome            `json:"outcome"` // clean, not_clean
	Clean                  bool                     `json:"clean"`
	Severity               Severity                 `json:"severity"` // clean, not_clean, action_needed, in_progress
	Reasons                []string                 `json:"reasons"`
	Warnings               []string                 `json:"warnings"`
	NextSteps              []NextStep               `json:"nextSteps"`
	Conflicts              []StagingConflict        `json:"conflicts"`
	Message                string                   `json:"message"`
	Now                    string                   `json:"now"`
	ThresholdDays          int                      `json:"thresholdDays"`
	Lock                   LockView                 `json:"lock"`
	PhaseFile              PhaseFileView            `json:"phaseFile"`
	AgentState             AgentStateView           `json:"agentState"`
	ReceiptCount           uint64                   `json:"receiptCount"`
	Receipts               []ReceiptSummary         `json:"receipts"`
	ReceiptsListed         string                   `json:"receiptsListed"` // recent, all, failed
	Receipt                *ReceiptLookup           `json:"receipt"`
	Fencing                *FencingPlan             `json:"fencing"`
	Manifests              ManifestViews            `json:"manifests"`
	Staging                StagingViews             `json:"staging"`
	StrayManifests         []Stray                  `json:"strayManifests"`
	CASHA256               map[string]string        `json:"caSHA256"`
	Certificates           []CertificateView        `json:"certificates"`
	CertificateAuthorities []CAView                 `json:"certificateAuthorities"`
	KubeletCertificates    []KubeletCertificateView `json:"kubeletCertificates"` // v1.2
	Live                   *LiveView                `json:"live"`                // v1.2
	StateError             *string                  `json:"stateError,omitempty"`
	Evidence               *Evidence                `json:"evidence,omitempty"` // with --evidence PATH
	DurationMs             uint64                   `json:"durationMs"`
	ExitCode               int                      `json:"exitCode"` // v1.1
}

// NextStep is one thing for the operator to do, with its exact command.
type NextStep struct {
	What    string  `json:"what"`
	Command *string `json:"command"`
}

// ManifestCopy is one copy of a manifest in a staging conflict.
type ManifestCopy struct {
	Path       string  `json:"path"`
	SHA256     *string `json:"sha256"`
	Size       *uint64 `json:"size"`
	ModifiedAt *string `json:"modifiedAt"`
	Error      *string `json:"error,omitempty"`
}

// StagingConflict is a manifest both active and staged, its copies compared.
type StagingConflict struct {
	Component Component    `json:"component"`
	Staging   string       `json:"staging"` // runbook, agent
	Active    ManifestCopy `json:"active"`
	Staged    ManifestCopy `json:"staged"`
	Identical *bool        `json:"identical"`
	Newer     *string      `json:"newer"` // active, staged, same
	Diff      []string     `json:"diff"`
}

// EvidenceSkip is a file the evidence bundle left out, and why.
type EvidenceSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Evidence is the bundle of --status-only --evidence PATH: written (SHA256,
// Bytes, Members, Receipts, ReceiptsLeftOut, Redacted, Skipped) or not
// (Error). From v1.2: Receipts in the bundle (the asked operation's, the
// listed ones, then the newest), ReceiptsLeftOut of completed/ not in it,
// and Redacted, the credential values in manifests replaced by
// "<redacted sha256:HEX>".
type Evidence struct {
	Path            string         `json:"path"`
	Written         bool           `json:"written"`
	SHA256          *string        `json:"sha256,omitempty"`
	Bytes           *uint64        `json:"bytes,omitempty"`
	Members         *uint64        `json:"members,omitempty"`
	Receipts        *uint64        `json:"receipts,omitempty"`
	ReceiptsLeftOut *uint64        `json:"receiptsLeftOut,omitempty"`
	Redacted        *uint64        `json:"redacted,omitempty"`
	Skipped         []EvidenceSkip `json:"skipped,omitempty"`
	Error           *string        `json:"error,omitempty"`
}

// FenceResult is what `--status-only --operation-id ID --fence` prints.
type FenceResult struct {
	Mode           Mode          `json:"mode"` // status
	RunbookVersion string        `json:"runbookVersion"`
	OperationID    string        `json:"operationID"`
	Fence          bool          `json:"fence"` // true
	Termination    Termination   `json:"termination"`
	Confirmed      bool          `json:"confirmed"`
	Reason         FenceReason   `json:"reason"` // v1.1: why; only lock-timeout is worth a retry
	Action         FenceAction   `json:"action"`
	Outcome        *Outcome      `json:"outcome"`
	Phase          *Phase        `json:"phase"`
	Message        string        `json:"message"`
	Receipt        *Receipt      `json:"receipt"`
	Restored       []Component   `json:"restored"`
	Conflicts      []string      `json:"conflicts"`
	Manifests      ManifestViews `json:"manifests"`
	DurationMs     uint64        `json:"durationMs"`
	ExitCode       int           `json:"exitCode"` // v1.1
}

// UsageError is what any mode prints when its arguments are refused
// (Outcome "usage_error", exit 2) or --root cannot be opened ("failed", exit 1).
type UsageError struct {
	Mode           *Mode   `json:"mode"`
	RunbookVersion string  `json:"runbookVersion"`
	OperationID    *string `json:"operationID"` // always null
	Outcome        Outcome `json:"outcome"`     // usage_error, or failed
	Phase          Phase   `json:"phase"`       // arguments
	Message        string  `json:"message"`
	Replayed       bool    `json:"replayed"`
	DurationMs     uint64  `json:"durationMs"`
	ExitCode       int     `json:"exitCode"` // v1.1
}

// VersionInfo is what `--version --output json` prints.
type VersionInfo struct {
	Mode            Mode   `json:"mode"`
	RunbookVersion  string `json:"runbookVersion"`
	GitCommit       string `json:"gitCommit"`
	ContractVersion string `json:"contractVersion"`
	DurationMs      uint64 `json:"durationMs"`
	ExitCode        int    `json:"exitCode"` // v1.1
}

// Help is what `--help --output json` prints.
type Help struct {
	Mode           Mode   `json:"mode"`
	RunbookVersion string `json:"runbookVersion"`
	Help           string `json:"help"`
	ExitCode       int    `json:"exitCode"` // v1.1
}

// decodeStrict decodes exactly one JSON value, refusing unknown fields.
func decodeStrict(b []byte, v interface{}) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

type envelope struct {
	Mode  *string         `json:"mode"`
	Phase json.RawMessage `json:"phase"`
	Fence *bool           `json:"fence"`
}

// Classify tells which document b is, from its mode, phase and fence fields.
func Classify(b []byte) (Kind, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return "", err
	}
	if string(e.Phase) == `"arguments"` {
		return KindUsageError, nil
	}
	mode := ""
	if e.Mode != nil {
		mode = *e.Mode
	}
	switch mode {
	case "help":
		return KindHelp, nil
	case "version":
		return KindVersion, nil
	case "check":
		return KindCheck, nil
	case "status":
		if e.Fence != nil && *e.Fence {
			return KindFence, nil
		}
		return KindStatus, nil
	case "renew", "legacy-v1":
		return KindRenew, nil
	}
	return "", fmt.Errorf("unknown document (mode %q)", mode)
}

func expectKind(b []byte, want Kind) error {
	k, err := Classify(b)
	if err != nil {
		return err
	}
	if k == KindUsageError && want != KindUsageError {
		var u UsageError
		if err := decodeStrict(b, &u); err != nil {
			return fmt.Errorf("usage error: %w", err)
		}
		return &UsageErrorResult{Doc: u}
	}
	if k != want {
		return fmt.Errorf("document is %s, not %s", k, want)
	}
	return nil
}

// UsageErrorResult is the error the mode decoders return when the binary
// printed a usage error (or could not open --root) instead.
type UsageErrorResult struct{ Doc UsageError }

func (e *UsageErrorResult) Error() string {
	return fmt.Sprintf("nvke-cert-runbook %s: %s", e.Doc.Outcome, e.Doc.Message)
}

func decodeDoc[T any](b []byte, want Kind) (*T, error) {
	if err := expectKind(b, want); err != nil {
		return nil, err
	}
	var r T
	if err := decodeStrict(b, &r); err != nil {
		return nil, fmt.Errorf("%s document: %w", want, err)
	}
	return &r, nil
}

// DecodeRenew decodes the output of a renewal (V2 or legacy-v1).
func DecodeRenew(b []byte) (*RenewResult, error) { return decodeDoc[RenewResult](b, KindRenew) }

// DecodeCheck decodes the output of --check.
func DecodeCheck(b []byte) (*CheckResult, error) { return decodeDoc[CheckResult](b, KindCheck) }

// DecodeStatus decodes the output of --status-only (operator view).
func DecodeStatus(b []byte) (*StatusResult, error) { return decodeDoc[StatusResult](b, KindStatus) }

// DecodeFence decodes the output of a fencing check.
func DecodeFence(b []byte) (*FenceResult, error) { return decodeDoc[FenceResult](b, KindFence) }

// DecodeUsageError decodes a usage error.
func DecodeUsageError(b []byte) (*UsageError, error) {
	return decodeDoc[UsageError](b, KindUsageError)
}

// DecodeVersion decodes the output of --version --output json.
func DecodeVersion(b []byte) (*VersionInfo, error) { return decodeDoc[VersionInfo](b, KindVersion) }

// DecodeHelp decodes the output of --help --output json.
func DecodeHelp(b []byte) (*Help, error) { return decodeDoc[Help](b, KindHelp) }

// Decode decodes any printed document into its type (*RenewResult,
// *CheckResult, *StatusResult, *FenceResult, *UsageError, *VersionInfo, *Help).
func Decode(b []byte) (Kind, interface{}, error) {
	k, err := Classify(b)
	if err != nil {
		return "", nil, err
	}
	var v interface{}
	switch k {
	case KindRenew:
		v = &RenewResult{}
	case KindCheck:
		v = &CheckResult{}
	case KindStatus:
		v = &StatusResult{}
	case KindFence:
		v = &FenceResult{}
	case KindUsageError:
		v = &UsageError{}
	case KindVersion:
		v = &VersionInfo{}
	case KindHelp:
		v = &Help{}
	}
	if err := decodeStrict(b, v); err != nil {
		return "", nil, fmt.Errorf("%s document: %w", k, err)
	}
	return k, v, nil
}

// ReceiptFormat is a receipt file's format; a V2 phase file's is
// PhaseFormatV2 (one of PhaseFormat's closed list).
const ReceiptFormat = "nvke-cert-runbook/receipt/v1"

// decodeTolerant decodes exactly one JSON object, allowing unknown fields
// (a file written by another version).
func decodeTolerant(b []byte, v interface{}) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// DecodeReceipt decodes a receipt file (state/completed/<ID>.json). Unknown
// fields are allowed (a newer runbook's receipt); the format, the
// operationID and a known outcome are required.
func DecodeReceipt(b []byte) (*Receipt, error) {
	var r Receipt
	if err := decodeTolerant(b, &r); err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	if r.Format != ReceiptFormat {
		return nil, fmt.Errorf("receipt: format %q is not %q", r.Format, ReceiptFormat)
	}
	if r.OperationID == "" {
		return nil, fmt.Errorf("receipt: no operationID")
	}
	if !r.Outcome.ValidReceipt() {
		return nil, fmt.Errorf("receipt %s: outcome %q is not a receipt outcome", r.OperationID, r.Outcome)
	}
	return &r, nil
}

// DecodePhaseV2 decodes a V2 phase file (a legacy five-line file is not
// JSON). Unknown fields are allowed; the format, the operationID and a
// known state are required.
func DecodePhaseV2(b []byte) (*PhaseV2, error) {
	var r PhaseV2
	if err := decodeTolerant(b, &r); err != nil {
		return nil, fmt.Errorf("phase file: %w", err)
	}
	if r.Format != PhaseFormatV2 {
		return nil, fmt.Errorf("phase file: format %q is not %q", r.Format, PhaseFormatV2)
	}
	if r.OperationID == "" {
		return nil, fmt.Errorf("phase file: no operationID")
	}
	if !r.State.Valid() {
		return nil, fmt.Errorf("phase file: state %q is not renewing, restart_pending or done", r.State)
	}
	return &r, nil
}

// DecodeLockOwner decodes state/owner. Unknown fields are allowed; pid and
// mode are required.
func DecodeLockOwner(b []byte) (*LockOwner, error) {
	var r LockOwner
	if err := decodeTolerant(b, &r); err != nil {
		return nil, fmt.Errorf("owner record: %w", err)
	}
	if r.PID == 0 || r.Mode == "" {
		return nil, fmt.Errorf("owner record: pid and mode are required")
	}
	return &r, nil
}

// DecodeAgentState decodes the node agent's state file (an open document:
// unknown keys are allowed; k8sCertRenewalState is required).
func DecodeAgentState(b []byte) (*AgentStateFile, error) {
	var probe struct {
		State *json.RawMessage `json:"k8sCertRenewalState"`
	}
	if err := decodeTolerant(b, &probe); err != nil {
		return nil, fmt.Errorf("agent state: %w", err)
	}
	if probe.State == nil {
		return nil, fmt.Errorf("agent state: no k8sCertRenewalState")
	}
	var r AgentStateFile
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("agent state: %w", err)
	}
	return &r, nil
}
