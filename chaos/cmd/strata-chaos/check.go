package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/strata/chaos/history"
)

// cmdCheck re-checks a saved history.json and writes its visualization.
func cmdCheck(args []string) int {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	html := fs.String("html", "history.html", "where to write the visualization")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Println("usage: strata-chaos check [-html out.html] history.json")
		return 2
	}
	ops, err := history.Load(fs.Arg(0))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	res, err := history.CheckLinearizable(ops, 5*time.Minute, *html)
	fmt.Printf("%d ops, %d checked (%d ambiguous): %s %v\n", len(ops), res.Checked, res.Ambiguous, res.Verdict, err)
	if res.Verdict != "Ok" {
		return 1
	}
	return 0
}
