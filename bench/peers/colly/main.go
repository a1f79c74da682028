package main

import _ "github.com/gocolly/colly/v2"

func main() {}
