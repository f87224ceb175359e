module github.com/quietwire/retry

go 1.22
