base rsa
owner_file 4242 op-6 renew
: | put "$STATE/lock"
