module github.com/quietwire/retry/testdata/herd

go 1.22

require github.com/quietwire/retry v0.0.0

replace github.com/quietwire/retry => ../..
