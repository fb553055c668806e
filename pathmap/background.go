package pathmap

import (
	"time"

	"golang.org/x/sys/unix"
)

// Changes applied while the tracer waits. The cache applies the changes
// inotify reports when a lookup needs it (sync), and a node a change drops
// keeps its descriptor until pinGrace has passed: while nobody looks a path
// up, a directory removed by the fast path library (which the tracer never
// hears of) or by the host stayed open in the tracer. The kernel reports
// IN_DELETE_SELF of a watched directory (and the watch's IN_IGNORED) only
// once its last reference goes, so a guest's `tail -F` whose file's
// directory was removed never heard of it. ApplyChangesInBackground applies
// them as they come; retire lets a removed directory go at once (its
// number then holds the dead directory until the grace ends), and
// letGoRemoved a removed file a thread's pin still holds.

// backgroundWait is how long the background goroutine waits for a change
// before it checks that the cache is still on and reaps old descriptors.
const backgroundWait = 250 // ms

// backgroundPause is how long it waits after a wake-up before it applies
// what came, so that it takes the cache's lock at most some 40 times a
// second.
const backgroundPause = 25 * time.Millisecond

// ApplyChangesInBackground starts a goroutine that applies the lookup
// cache's reported changes as they come (and closes the dropped nodes'
// descriptors once their grace has passed), rather than only at the next
// lookup; it ends when the cache is closed or turned off. A no-op without
// a cache.
func (m *Mapper) ApplyChangesInBackground() {
	if m == nil || m.cache == nil {
		return
	}
	c := m.cache
	go func() {
		for {
			c.mu.Lock()
			epf, ifd := c.epf, c.ifd
			c.mu.Unlock()
			if ifd < 0 {
				return
			}
			if epf >= 0 {
				var evs [1]unix.EpollEvent
				unix.EpollWait(epf, evs[:], backgroundWait)
			} else {
				unix.Poll([]unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}, backgroundWait)
			}
			// Changes come in bursts (a tar, a build): a pause lets the
			// burst's events be read at once, rather than the lock be
			// taken from the tracer at every one.
			time.Sleep(backgroundPause)
			c.mu.Lock()
			if c.ifd >= 0 {
				c.sync()
				c.reap(false)
				c.letGoRemoved(time.Now())
			}
			c.mu.Unlock()
		}
	}()
}
