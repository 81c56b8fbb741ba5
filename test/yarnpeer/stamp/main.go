// Command stamp prints the real-YARN peer's source stamp (yarnpeer.Stamp)
// for test/yarn/build.sh: run from the repository's top.
package main

import (
	"fmt"
	"os"

	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

func main() {
	s, err := yarnpeer.Stamp(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stamp:", err)
		os.Exit(1)
	}
	fmt.Println(s)
}
