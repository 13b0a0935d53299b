// SPDX-License-Identifier: Apache-2.0
//go:build cgo

package main

// static int roottrace_cgo_mark(void) { return 1; }
import "C"

// cgoMark makes a cgo build link externally: C code with .eh_frame beside the Go code.
func cgoMark() int { return int(C.roottrace_cgo_mark()) }
