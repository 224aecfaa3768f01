base rsa
phase_v2 renew-k8s-certs-2026-11-29T23-00-00Z-7f3e9c1a2b4d4e6f8a0b1c2d3e4f5a6b restart_pending kube-apiserver
# The fencing check recorded it abandoned and put kube-apiserver back.
receipt renew-k8s-certs-2026-11-29T23-00-00Z-7f3e9c1a2b4d4e6f8a0b1c2d3e4f5a6b abandoned restart:kube-apiserver
