base rsa
kubelet_pki apiserver-kubelet-client.crt apiserver.crt true
ln -sfn /etc/kubernetes/pki/apiserver.key "$ROOT/var/lib/kubelet/pki/kubelet-client-current.pem"
