// SPDX-License-Identifier: Apache-2.0
// A Go service's hot path for the symbol tests (standard library only): gohot SECONDS spins in
// main.settleInvoices, called by main.billingRun, whose leaf main.applyRate the compiler
// inlines. Prints "ready" once running. Built stripped, PIE, -trimpath and with cgo by the test.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// applyRate is small enough to be inlined into settleInvoices: its own frame only through
// the inline tree.
func applyRate(v uint64) uint64 {
	v ^= v >> 7
	v *= 0x9e3779b97f4a7c15
	return v ^ (v >> 11)
}

// settleInvoices keeps a stack frame (the ledger array), so it saves the frame pointer and
// its caller stays on the stack: a frameless Go leaf would hide its caller from the walk.
//
//go:noinline
func settleInvoices(n int) uint64 {
	var ledger [16]uint64
	var x uint64
	for i := 0; i < n; i++ {
		x += applyRate(uint64(i) + x + ledger[i&15])
		ledger[i&15] = x
	}
	return x + ledger[n&15]
}

//go:noinline
func billingRun(deadline time.Time) {
	for time.Now().Before(deadline) {
		sink += settleInvoices(200000)
	}
}

func main() {
	seconds := 5.0
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = s
		}
	}
	fmt.Println("ready", cgoMark())
	billingRun(time.Now().Add(time.Duration(seconds * float64(time.Second))))
	fmt.Fprintln(os.Stderr, sink)
}
