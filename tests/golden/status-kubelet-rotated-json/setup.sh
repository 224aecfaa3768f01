base rsa
kubelet_pki apiserver-kubelet-client.crt apiserver.crt true
