module github.com/tapedeck/tapedeck

go 1.26.8
