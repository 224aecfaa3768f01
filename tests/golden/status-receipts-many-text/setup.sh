base rsa
completed_dir
for i in $(seq -w 1 40); do
  id="renew-k8s-certs-2026-11-$((10#$i % 28 + 1))T03-00-00Z-0123456789abcdef0123456789ab$i"
  o=succeeded; case $i in 07|23) o=failed;; 31) o=failed_not_restored;; esac
  [ $o = succeeded ] && o=renewed
  if [ $o = renewed ]; then receipt "$id" $o; else receipt "$id" $o restart:kube-apiserver; fi
  touch -d "2026-11-01T00:00:00Z + $i hours" "$STATE/completed/$id.json"
done
