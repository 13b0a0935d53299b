// SPDX-License-Identifier: Apache-2.0
//go:build cgo

package main

// static int roottrace_cgo_mark(void) { return 1; }
import "C"

func cgoMark() int { return int(C.roottrace_cgo_mark()) }
