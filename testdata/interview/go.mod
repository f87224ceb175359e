module github.com/quietwire/retry/testdata/interview

go 1.22
