// Package herd holds the simulations behind the figures that the README of
// github.com/quietwire/retry quotes in "Choosing a jitter, a Budget and a
// policy": many clients retrying through this module's jitter functions,
// Budget and Do, on seeded virtual time. It has no API; the simulations are
// its tests, and `go test -run TestHerd -v .` prints their tables.
//
// It is a module of its own, under testdata, so that `go test ./...` at the
// repository root leaves it out, and it uses only retry's exported API.
package herd
