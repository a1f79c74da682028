package layered

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketURLs  = []byte("urls")
	bucketMarks = []byte("marks")
)

// urlSet is the full stored URL set of S403: every URL ever stored as a
// round's (or pass's) input, in a bbolt file. Adds are committed in one
// transaction together with a marker naming the step that made them, so a
// step is either wholly in the set or not at all.
type urlSet struct {
	db *bolt.DB
}

var errLocked = errors.New("locked by another process")

func openURLSet(dir string) (*urlSet, error) {
	path := filepath.Join(dir, "urls.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			err = errLocked
		}
		return nil, fmt.Errorf("cannot open the layered URL set %s (is another layered crawl running on this data directory?): %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketURLs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketMarks)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot initialise the layered URL set %s: %w", path, err)
	}
	return &urlSet{db: db}, nil
}

// Contains reports whether url was stored.
func (s *urlSet) Contains(_ context.Context, url string) (bool, error) {
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketURLs).Get([]byte(url)) != nil
		return nil
	})
	return ok, err
}

// Len returns the number of URLs stored.
func (s *urlSet) Len() int {
	n := 0
	s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketURLs).Stats().KeyN
		return nil
	})
	return n
}

// AddAll stores urls and the marker in one transaction.
func (s *urlSet) AddAll(_ context.Context, urls []string, marker string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketURLs)
		for _, u := range urls {
			if err := b.Put([]byte(u), []byte{1}); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMarks).Put([]byte(marker), []byte{1})
	})
	if err != nil {
		return fmt.Errorf("cannot store %d URLs in the layered URL set: %w", len(urls), err)
	}
	return nil
}

// Marked reports whether the step named marker was committed.
func (s *urlSet) Marked(marker string) (bool, error) {
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketMarks).Get([]byte(marker)) != nil
		return nil
	})
	return ok, err
}

func (s *urlSet) Close() error { return s.db.Close() }
