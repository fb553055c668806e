//go:build race

package pathmap

// sync.Pool drops items at random under the race detector.
const raceEnabled = true
