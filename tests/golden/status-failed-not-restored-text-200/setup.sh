base rsa
receipt op-failed-1 failed_not_restored restart:kube-apiserver
stage kube-apiserver
