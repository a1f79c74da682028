package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// BLPop is BLPOP with a fractional time-out (Redis ≥ 6). go-redis's BLPop rounds a
// time-out below one second up to a whole second (and logs each time), which would
// stretch every idle wait of a loop polling faster than that. It returns the key and the
// value, or redis.Nil on time-out.
func BLPop(ctx context.Context, rdb redis.UniversalClient, wait time.Duration, keys ...string) ([]string, error) {
	args := make([]any, 0, len(keys)+2)
	args = append(args, "blpop")
	for _, k := range keys {
		args = append(args, k)
	}
	args = append(args, seconds(wait))
	cmd := redis.NewStringSliceCmd(ctx, args...)
	if err := rdb.Process(ctx, cmd); err != nil {
		return nil, err
	}
	return cmd.Val(), nil
}

// BLMove is BLMOVE src dst LEFT RIGHT with a fractional time-out (Redis ≥ 6.2), for
// the same reason as BLPop. It returns the moved value, or redis.Nil on time-out.
func BLMove(ctx context.Context, rdb redis.UniversalClient, src, dst string, wait time.Duration) (string, error) {
	v, err := rdb.Do(ctx, "BLMOVE", src, dst, "LEFT", "RIGHT", seconds(wait)).Result()
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("BLMOVE returned %T, want a string", v)
	}
	return s, nil
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
