module nvke.example/certrunbook

go 1.22
