base rsa
stage kube-controller-manager
