module github.com/strata/examples/go

go 1.24
