// Package documents describes nvke-cert-runbook's contract for a Go fleet
// controller: typed values of every JSON document the binary prints and
// every JSON file it writes (embedded/schema), their decoders, the typed
// closed lists with Valid(), the exit codes, and Decide: how a renewal's
// answers become the cycle's Result (Succeeded, FailedLockReleased or
// FailedLockRetained).
//
// It neither embeds the binary nor reaches a node: a controller that only
// decodes (a receipt read from the node, a check document) imports this
// package alone. The executor runs the binary (package executor), over
// SSH (package sshtransport); package binary embeds it.
//
// Standard library only.
package documents
