base rsa
completed_dir
put "$STATE/completed/recover-1@cp-1.json" <<JSON
{
  "format": "nvke-cert-runbook/receipt/v1",
  "operationID": "recover-1@cp-1",
  "outcome": "renewed",
  "phase": "done",
  "message": "recovered (--recover-expired): renewed every leaf (expired: etcd-peer expired 2027-03-01); restarted etcd, kube-apiserver, kube-controller-manager, kube-scheduler one at a time, each serving its renewed certificate",
  "failedComponent": null,
  "manifests": {
    "etcd": "active",
    "kube-apiserver": "active",
    "kube-controller-manager": "active",
    "kube-scheduler": "active"
  },
  "finishedAt": "2026-11-29T23:30:00Z",
  "runbookVersion": "0.1.0",
  "caSHA256": {
    "ca.crt": "$(ca_sha ca.crt)",
    "etcd/ca.crt": "$(ca_sha etcd/ca.crt)",
    "front-proxy-ca.crt": "$(ca_sha front-proxy-ca.crt)"
  },
  "recovery": true,
  "healthAtEnd": "not healthy yet: local health gate did not pass within 3s (1 attempts): etcd: 1 of 3 voters healthy"
}
JSON
