base rsa
kubelet_pki etcd/peer.crt apiserver.crt false
