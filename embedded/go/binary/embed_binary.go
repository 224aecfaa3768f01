//go:build !certrunbook_nobinary

package binary

import _ "embed"

//go:embed nvke-cert-runbook
var binary []byte

//go:embed manifest.json
var manifestJSON []byte
