base rsa
state_dir
printf "STATE=renewing\xff\nCOMPONENT=none\n" | put "$STATE/phase"
