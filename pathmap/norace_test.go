//go:build !race

package pathmap

const raceEnabled = false
