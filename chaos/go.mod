module github.com/strata/chaos

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1
	golang.org/x/net v0.62.0
)

require golang.org/x/text v0.43.0 // indirect
