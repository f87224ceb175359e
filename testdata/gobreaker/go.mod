module github.com/quietwire/retry/testdata/gobreaker

go 1.25

require (
	github.com/quietwire/retry v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
)

replace github.com/quietwire/retry => ../..
