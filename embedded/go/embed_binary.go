//go:build !certrunbook_nobinary

package certrunbook

import _ "embed"

//go:embed nvke-cert-runbook
var binary []byte

//go:embed manifest.json
var manifestJSON []byte
