package documents

// More closed lists of the contract (embedded/schema), as typed strings
// with Valid; the drift test checks them against the schemas both ways.

// AgentPhase is the node agent's k8sCertRenewalState.phase (its state file; check and status show the pending ones).
type AgentPhase string

// The values of AgentPhase.
const (
	AgentPhaseRenewing       AgentPhase = "renewing"
	AgentPhaseRestartPending AgentPhase = "restart_pending"
	AgentPhaseIdle           AgentPhase = "idle"
	AgentPhaseDone           AgentPhase = "done"
	AgentPhaseCompleted      AgentPhase = "completed"
	AgentPhaseFailed         AgentPhase = "failed"
)

// Valid reports whether x is one of the values of AgentPhase.
func (x AgentPhase) Valid() bool {
	switch x {
	case AgentPhaseRenewing, AgentPhaseRestartPending, AgentPhaseIdle, AgentPhaseDone, AgentPhaseCompleted, AgentPhaseFailed:
		return true
	}
	return false
}

// CAName is a certificate authority's name (certificateAuthorities[].name, certificates[].ca).
type CAName string

// The values of CAName.
const (
	CANameCA           CAName = "ca"
	CANameEtcdCA       CAName = "etcd-ca"
	CANameFrontProxyCA CAName = "front-proxy-ca"
)

// Valid reports whether x is one of the values of CAName.
func (x CAName) Valid() bool {
	switch x {
	case CANameCA, CANameEtcdCA, CANameFrontProxyCA:
		return true
	}
	return false
}

// CertificateName is a kubeadm leaf certificate (or kubeconfig) the runbook renews.
type CertificateName string

// The values of CertificateName.
const (
	CertificateNameAPIServer              CertificateName = "apiserver"
	CertificateNameAPIServerKubeletClient CertificateName = "apiserver-kubelet-client"
	CertificateNameAPIServerEtcdClient    CertificateName = "apiserver-etcd-client"
	CertificateNameFrontProxyClient       CertificateName = "front-proxy-client"
	CertificateNameEtcdServer             CertificateName = "etcd-server"
	CertificateNameEtcdPeer               CertificateName = "etcd-peer"
	CertificateNameEtcdHealthcheckClient  CertificateName = "etcd-healthcheck-client"
	CertificateNameAdminConf              CertificateName = "admin.conf"
	CertificateNameSuperAdminConf         CertificateName = "super-admin.conf"
	CertificateNameControllerManagerConf  CertificateName = "controller-manager.conf"
	CertificateNameSchedulerConf          CertificateName = "scheduler.conf"
)

// Valid reports whether x is one of the values of CertificateName.
func (x CertificateName) Valid() bool {
	switch x {
	case CertificateNameAPIServer, CertificateNameAPIServerKubeletClient, CertificateNameAPIServerEtcdClient, CertificateNameFrontProxyClient, CertificateNameEtcdServer, CertificateNameEtcdPeer, CertificateNameEtcdHealthcheckClient, CertificateNameAdminConf, CertificateNameSuperAdminConf, CertificateNameControllerManagerConf, CertificateNameSchedulerConf:
		return true
	}
	return false
}

// CertificateStatus is whether a certificate could be read (certificates[].status).
type CertificateStatus string

// The values of CertificateStatus.
const (
	CertificateStatusOK      CertificateStatus = "ok"
	CertificateStatusSkipped CertificateStatus = "skipped"
	CertificateStatusError   CertificateStatus = "error"
)

// Valid reports whether x is one of the values of CertificateStatus.
func (x CertificateStatus) Valid() bool {
	switch x {
	case CertificateStatusOK, CertificateStatusSkipped, CertificateStatusError:
		return true
	}
	return false
}

// CheckFailure is why a check failed (the check's failure).
type CheckFailure string

// The values of CheckFailure.
const (
	CheckFailureBusy       CheckFailure = "busy"
	CheckFailureState      CheckFailure = "state"
	CheckFailurePhaseFile  CheckFailure = "phase-file"
	CheckFailureManifests  CheckFailure = "manifests"
	CheckFailureAgentState CheckFailure = "agent-state"
	CheckFailurePKI        CheckFailure = "pki"
)

// Valid reports whether x is one of the values of CheckFailure.
func (x CheckFailure) Valid() bool {
	switch x {
	case CheckFailureBusy, CheckFailureState, CheckFailurePhaseFile, CheckFailureManifests, CheckFailureAgentState, CheckFailurePKI:
		return true
	}
	return false
}

// KubeletRole is a kubelet certificate's role (kubeletCertificates[].role).
type KubeletRole string

// The values of KubeletRole.
const (
	KubeletRoleClient  KubeletRole = "client"
	KubeletRoleServing KubeletRole = "serving"
)

// Valid reports whether x is one of the values of KubeletRole.
func (x KubeletRole) Valid() bool {
	switch x {
	case KubeletRoleClient, KubeletRoleServing:
		return true
	}
	return false
}

// FindingWeight is how much a live finding weighs (live.pods[].findings[].weight).
type FindingWeight string

// The values of FindingWeight.
const (
	FindingWeightActionNeeded FindingWeight = "action_needed"
	FindingWeightNotClean     FindingWeight = "not_clean"
)

// Valid reports whether x is one of the values of FindingWeight.
func (x FindingWeight) Valid() bool {
	switch x {
	case FindingWeightActionNeeded, FindingWeightNotClean:
		return true
	}
	return false
}

// LockState is the renewal lock as the read-only modes find it (lock.state).
type LockState string

// The values of LockState.
const (
	LockStateFree   LockState = "free"
	LockStateHeld   LockState = "held"
	LockStateAbsent LockState = "absent"
	LockStateError  LockState = "error"
)

// Valid reports whether x is one of the values of LockState.
func (x LockState) Valid() bool {
	switch x {
	case LockStateFree, LockStateHeld, LockStateAbsent, LockStateError:
		return true
	}
	return false
}

// PhaseFormat is a phase file's format (phaseFile.format, resumedFrom.format).
type PhaseFormat string

// The values of PhaseFormat.
const (
	PhaseFormatV2             PhaseFormat = "nvke-cert-runbook/phase/v2"
	PhaseFormatLegacyFiveLine PhaseFormat = "legacy-five-line"
)

// Valid reports whether x is one of the values of PhaseFormat.
func (x PhaseFormat) Valid() bool {
	switch x {
	case PhaseFormatV2, PhaseFormatLegacyFiveLine:
		return true
	}
	return false
}

// PhaseIntent is what the phase file says is left to do (phaseFile.intent).
type PhaseIntent string

// The values of PhaseIntent.
const (
	PhaseIntentAbsent        PhaseIntent = "absent"
	PhaseIntentDone          PhaseIntent = "done"
	PhaseIntentMalformed     PhaseIntent = "malformed"
	PhaseIntentDoneByReceipt PhaseIntent = "done-by-receipt"
	PhaseIntentPending       PhaseIntent = "pending"
)

// Valid reports whether x is one of the values of PhaseIntent.
func (x PhaseIntent) Valid() bool {
	switch x {
	case PhaseIntentAbsent, PhaseIntentDone, PhaseIntentMalformed, PhaseIntentDoneByReceipt, PhaseIntentPending:
		return true
	}
	return false
}

// PhaseState is the V2 phase file's state (and the legacy one's).
type PhaseState string

// The values of PhaseState.
const (
	PhaseStateRenewing       PhaseState = "renewing"
	PhaseStateRestartPending PhaseState = "restart_pending"
	PhaseStateDone           PhaseState = "done"
)

// Valid reports whether x is one of the values of PhaseState.
func (x PhaseState) Valid() bool {
	switch x {
	case PhaseStateRenewing, PhaseStateRestartPending, PhaseStateDone:
		return true
	}
	return false
}

// PhaseFileStatus is whether the phase file is there and parses (phaseFile.status).
type PhaseFileStatus string

// The values of PhaseFileStatus.
const (
	PhaseFileStatusAbsent    PhaseFileStatus = "absent"
	PhaseFileStatusPresent   PhaseFileStatus = "present"
	PhaseFileStatusMalformed PhaseFileStatus = "malformed"
)

// Valid reports whether x is one of the values of PhaseFileStatus.
func (x PhaseFileStatus) Valid() bool {
	switch x {
	case PhaseFileStatusAbsent, PhaseFileStatusPresent, PhaseFileStatusMalformed:
		return true
	}
	return false
}

// OwnerMode is the mode of the run named by the lock's owner record.
type OwnerMode string

// The values of OwnerMode.
const (
	OwnerModeRenew       OwnerMode = "renew"
	OwnerModeLegacyV1    OwnerMode = "legacy-v1"
	OwnerModeStatusFence OwnerMode = "status-fence"
)

// Valid reports whether x is one of the values of OwnerMode.
func (x OwnerMode) Valid() bool {
	switch x {
	case OwnerModeRenew, OwnerModeLegacyV1, OwnerModeStatusFence:
		return true
	}
	return false
}

// EndpointSource is where a renewal's container runtime endpoint came from (runtimeEndpoint.source).
type EndpointSource string

// The values of EndpointSource.
const (
	EndpointSourceFlag          EndpointSource = "flag"
	EndpointSourceKubeadmFlags  EndpointSource = "kubeadm-flags"
	EndpointSourceKubeletConfig EndpointSource = "kubelet-config"
	EndpointSourceCrictl        EndpointSource = "crictl"
)

// Valid reports whether x is one of the values of EndpointSource.
func (x EndpointSource) Valid() bool {
	switch x {
	case EndpointSourceFlag, EndpointSourceKubeadmFlags, EndpointSourceKubeletConfig, EndpointSourceCrictl:
		return true
	}
	return false
}

// StatusOutcome is the status view's outcome.
type StatusOutcome string

// The values of StatusOutcome.
const (
	StatusOutcomeClean    StatusOutcome = "clean"
	StatusOutcomeNotClean StatusOutcome = "not_clean"
)

// Valid reports whether x is one of the values of StatusOutcome.
func (x StatusOutcome) Valid() bool {
	switch x {
	case StatusOutcomeClean, StatusOutcomeNotClean:
		return true
	}
	return false
}

// Severity is the status view's severity.
type Severity string

// The values of Severity.
const (
	SeverityClean        Severity = "clean"
	SeverityNotClean     Severity = "not_clean"
	SeverityActionNeeded Severity = "action_needed"
	SeverityInProgress   Severity = "in_progress"
)

// Valid reports whether x is one of the values of Severity.
func (x Severity) Valid() bool {
	switch x {
	case SeverityClean, SeverityNotClean, SeverityActionNeeded, SeverityInProgress:
		return true
	}
	return false
}

// FencingAction is what a fencing check would do now (status fencing.action).
type FencingAction string

// The values of FencingAction.
const (
	FencingActionConfirm FencingAction = "confirm"
	FencingActionAbandon FencingAction = "abandon"
	FencingActionRefuse  FencingAction = "refuse"
)

// Valid reports whether x is one of the values of FencingAction.
func (x FencingAction) Valid() bool {
	switch x {
	case FencingActionConfirm, FencingActionAbandon, FencingActionRefuse:
		return true
	}
	return false
}
