/*
 * threads - many threads doing path system calls at once, for the tracer's thread handling.
 *
 * usage: threads [-t THREADS] [-n ITERATIONS] PATH...
 *
 * Each thread stats (and lstats, and readlinks when a path is a symlink) every PATH in a loop
 * and checks that each answer equals the one the main thread got before starting them. Prints
 * one deterministic summary line and exits 0, or prints the first mismatch and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ref {
	const char *path;
	int err;          /* errno of stat, 0 if it succeeded */
	struct stat st;   /* stat result */
	int lerr;
	struct stat lst;  /* lstat result */
	char link[256];   /* readlink result ("" if not a symlink) */
};

static struct ref *refs;
static int npaths, iterations = 2000;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int bad;

static void probe(const char *p, int *err, struct stat *st, int *lerr, struct stat *lst, char *link)
{
	ssize_t n;
	*err = stat(p, st) < 0 ? errno : 0;
	*lerr = lstat(p, lst) < 0 ? errno : 0;
	link[0] = 0;
	if (!*lerr && S_ISLNK(lst->st_mode) && (n = readlink(p, link, 255)) >= 0)
		link[n] = 0;
}

static int same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_size == b->st_size;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	int i, j;
	for (i = 0; i < iterations && !bad; i++) {
		for (j = 0; j < npaths; j++) {
			struct ref *r = &refs[j];
			struct stat st, lst;
			int err, lerr;
			char link[256];
			probe(r->path, &err, &st, &lerr, &lst, link);
			if (err != r->err || lerr != r->lerr || (!err && !same(&st, &r->st)) ||
			    (!lerr && !same(&lst, &r->lst)) || strcmp(link, r->link)) {
				pthread_mutex_lock(&out_mu);
				if (!bad)
					printf("thread %ld iteration %d: %s: got err=%d lerr=%d link=%s, want err=%d lerr=%d link=%s\n",
					       id, i, r->path, err, lerr, link, r->err, r->lerr, r->link);
				bad = 1;
				pthread_mutex_unlock(&out_mu);
				return NULL;
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = 8, c, i;
	pthread_t *th;
	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			nthreads = atoi(optarg);
		else if (c == 'n')
			iterations = atoi(optarg);
		else
			return 2;
	}
	npaths = argc - optind;
	if (npaths < 1 || nthreads < 1) {
		fprintf(stderr, "usage: threads [-t THREADS] [-n ITERATIONS] PATH...\n");
		return 2;
	}
	refs = calloc(npaths, sizeof *refs);
	for (i = 0; i < npaths; i++) {
		refs[i].path = argv[optind + i];
		probe(refs[i].path, &refs[i].err, &refs[i].st, &refs[i].lerr, &refs[i].lst, refs[i].link);
	}
	th = calloc(nthreads, sizeof *th);
	for (i = 0; i < nthreads; i++)
		if ((errno = pthread_create(&th[i], NULL, worker, (void *)(long)i)) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (bad)
		return 1;
	printf("threads=%d iterations=%d paths=%d ok\n", nthreads, iterations, npaths);
	return 0;
}
