// Package executor runs nvke-cert-runbook on one control-plane node
// through a Transport (the controller's legacy executor, modelled on
// containerd's go-runc): the check and its Plan, a V2 renewal with receipt
// verification, the fencing check, and the cleanup that decides whether
// the cluster mutation lock is released or retained (documents.Decide);
// the argument builders for callers that bring their own execution;
// progress events; typed errors.
//
// The binary it pushes and runs is its Binary field, binary.Embedded()
// (certrunbook.New wires both): this package does not embed it, so it
// builds and its tests run without the Rust artifact (a certrunbooktest
// Node stands in). The SSH transport is package sshtransport.
//
// Standard library only.
package executor
