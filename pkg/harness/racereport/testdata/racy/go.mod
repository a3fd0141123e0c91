module racy

go 1.24
