// Package sshtransport is an executor.Transport over the OpenSSH client
// (ssh, never a local shell; every word quoted for the remote one with
// executor.ShellQuote).
//
// Standard library only.
package sshtransport
