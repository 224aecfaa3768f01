base rsa
receipt op-1 failed_not_restored restart:kube-apiserver
stage kube-apiserver
