base rsa
receipt op-failed-1 failed_not_restored restart
stage kube-apiserver
