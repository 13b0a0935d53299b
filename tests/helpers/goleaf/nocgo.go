// SPDX-License-Identifier: Apache-2.0
//go:build !cgo

package main

func cgoMark() int { return 0 }
