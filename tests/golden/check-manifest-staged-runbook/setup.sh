base rsa
stage kube-apiserver
