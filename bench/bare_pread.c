/*
 * The floor for one-at-a-time reads: a bare pread loop over random block-aligned offsets,
 * with no per-I/O timing at all. bench/vs-fio.sh compares the engine's QD1 read IOPS on
 * tmpfs against it, so the engine's own overhead is the whole difference.
 *
 * usage: bare_pread FILE SIZE_BYTES BLOCK_BYTES SECONDS
 * prints: iops=<n> ios=<n> seconds=<s> cpu_s=<user+sys>
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s FILE SIZE_BYTES BLOCK_BYTES SECONDS\n", argv[0]);
		return 2;
	}
	uint64_t size = strtoull(argv[2], NULL, 10);
	uint64_t bs = strtoull(argv[3], NULL, 10);
	double seconds = atof(argv[4]);
	uint64_t blocks = bs ? size / bs : 0;
	if (blocks == 0 || seconds <= 0) {
		fprintf(stderr, "bare_pread: size must hold at least one block, seconds > 0\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	void *buf;
	if (posix_memalign(&buf, 4096, bs) != 0) {
		perror("posix_memalign");
		return 1;
	}
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	uint64_t ios = 0;
	double cpu0 = cpu_s();
	double start = now_s();
	double deadline = start + seconds;
	double end;
	for (;;) {
		/* The clock is read once per 1024 reads: the loop is untimed per I/O. */
		for (int i = 0; i < 1024; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			off_t off = (off_t)((x % blocks) * bs);
			if (pread(fd, buf, bs, off) != (ssize_t)bs) {
				perror("pread");
				return 1;
			}
		}
		ios += 1024;
		end = now_s();
		if (end >= deadline)
			break;
	}
	double elapsed = end - start;
	printf("iops=%.1f ios=%llu seconds=%.3f cpu_s=%.3f\n", ios / elapsed,
	       (unsigned long long)ios, elapsed, cpu_s() - cpu0);
	return 0;
}
