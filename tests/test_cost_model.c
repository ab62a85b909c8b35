/* test_cost_model.c - the α-β comm-model cache that --bench-comm writes and
 * reports read: where it lives ($XDG_CACHE_HOME, then $HOME/.cache, else
 * nowhere, never /tmp), how it is written (a private new file renamed into
 * place, folders 0700, a link planted at its name neither followed nor
 * replaced), what is read back (only this user's regular file), the errors
 * of a folder that cannot be made, and the lookup from text in memory.
 *
 * Some checks need a second user: run as root, they change to `nobody`
 * (uid 65534) in a child process; run as anyone else, the file owned by
 * another user cannot be made and that check is skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm.h"
#include "cost_model.h"

#define NOBODY 65534
/* A reader that opened a FIFO would wait for a writer for ever. */
#define HANG_LIMIT_S 30

static char g_dir[256];

static int setup(void **state)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/ddptop_test_cost_XXXXXX");
    if (!mkdtemp(g_dir) || chmod(g_dir, 0755) != 0)
        return -1;
    unsetenv("DDPTOP_COMM_MODEL");
    return 0;
}

static int teardown(void **state)
{
    char cmd[640];
    snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void in_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

static struct cost_fit fit_of(int ranks, double alpha)
{
    struct cost_fit f = {.backend = "shm", .algo = "ring", .ranks = ranks, .coll = COLL_ALLREDUCE};
    f.alpha_us = alpha;
    f.beta_us_per_byte = 1e-4;
    f.r2 = 0.99;
    f.valid = 1;
    return f;
}

static void test_path(void **state)
{
    char buf[1024];
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    setenv("HOME", "/home/u", 1);
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    assert_string_equal(buf, "/x/cache/ddptop/comm-model.json");
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as the XDG rules say */
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    assert_string_equal(buf, "/home/u/.cache/ddptop/comm-model.json");
    unsetenv("XDG_CACHE_HOME");
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    assert_string_equal(buf, "/home/u/.cache/ddptop/comm-model.json");
    /* neither: nowhere, not a shared folder */
    unsetenv("HOME");
    assert_null(cost_model_path(buf, sizeof(buf)));
    assert_string_equal(buf, "");
    setenv("HOME", "", 1);
    assert_null(cost_model_path(buf, sizeof(buf)));
    struct cost_fit f = fit_of(2, 5), got;
    char err[512];
    assert_int_equal(cost_model_save(buf, &f, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "XDG_CACHE_HOME"));
    assert_int_equal(cost_model_lookup(buf, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
    setenv("DDPTOP_COMM_MODEL", "/some/file.json", 1);
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    assert_string_equal(buf, "/some/file.json");
    unsetenv("DDPTOP_COMM_MODEL");
}

/* HOME (or XDG_CACHE_HOME) a folder anyone can write into, as /tmp: no
 * place for the cost model under it, and the reason names the variable */
static void test_path_shared_home(void **state)
{
    char shared[512], buf[1024], why[1200];
    in_dir(shared, sizeof(shared), "shared");
    assert_int_equal(mkdir(shared, 0777), 0);
    assert_int_equal(chmod(shared, 01777), 0); /* (as /tmp is) */
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", shared, 1);
    assert_null(cost_model_path(buf, sizeof(buf)));
    cost_model_no_place(why, sizeof(why));
    printf("  %s\n", why);
    assert_non_null(strstr(why, "HOME is "));
    assert_non_null(strstr(why, "a folder anyone can write into"));
    setenv("XDG_CACHE_HOME", shared, 1);
    assert_null(cost_model_path(buf, sizeof(buf)));
    cost_model_no_place(why, sizeof(why));
    assert_non_null(strstr(why, "XDG_CACHE_HOME is "));
    /* a private one under it is the user's own: used */
    char mine[600], want[700];
    snprintf(mine, sizeof(mine), "%s/mine", shared);
    assert_int_equal(mkdir(mine, 0700), 0);
    setenv("XDG_CACHE_HOME", mine, 1);
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    snprintf(want, sizeof(want), "%s/ddptop/comm-model.json", mine);
    assert_string_equal(buf, want);
    /* named outright, it is the user's choice (its folder is checked on use) */
    setenv("DDPTOP_COMM_MODEL", "/some/file.json", 1);
    setenv("XDG_CACHE_HOME", shared, 1);
    assert_non_null(cost_model_path(buf, sizeof(buf)));
    unsetenv("DDPTOP_COMM_MODEL");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
}

static void test_save_private_and_atomic(void **state)
{
    char cache[512], path[1024], err[1200];
    in_dir(cache, sizeof(cache), "private/cache");
    setenv("XDG_CACHE_HOME", cache, 1);
    assert_non_null(cost_model_path(path, sizeof(path)));
    struct cost_fit two = fit_of(2, 5), four = fit_of(4, 9), got;
    assert_int_equal(cost_model_save(path, &two, 1, err, sizeof(err)), 0);
    assert_int_equal(cost_model_save(path, &four, 1, err, sizeof(err)), 0);
    two.alpha_us = 6; /* replaces the 2-rank fit, keeps the 4-rank one */
    assert_int_equal(cost_model_save(path, &two, 1, err, sizeof(err)), 0);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), 0);
    assert_true(got.alpha_us == 6);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 4, COLL_ALLREDUCE, &got), 0);
    assert_true(got.alpha_us == 9);
    assert_int_equal(cost_model_lookup(path, "shm", "naive", 4, COLL_ALLREDUCE, &got), -1);

    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/ddptop", cache);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* the temporary files were renamed, none left behind */
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 1);
    unsetenv("XDG_CACHE_HOME");
}

/* A link planted at the cache's name, to a file or to nothing yet: the
 * target is never written, and the link is refused with one line. */
static void test_link_not_followed(void **state)
{
    char cache[512], path[1024], victim[512], err[1200];
    in_dir(cache, sizeof(cache), "linked");
    in_dir(victim, sizeof(victim), "victim");
    setenv("XDG_CACHE_HOME", cache, 1);
    assert_non_null(cost_model_path(path, sizeof(path)));
    char ddir[600];
    snprintf(ddir, sizeof(ddir), "%s/ddptop", cache);
    assert_int_equal(mkdir(cache, 0700), 0);
    assert_int_equal(mkdir(ddir, 0700), 0);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious", f);
    fclose(f);
    assert_int_equal(symlink(victim, path), 0);
    struct cost_fit fit = fit_of(2, 5), got;
    assert_int_equal(cost_model_save(path, &fit, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "comm-model.json: not a regular file (a symbolic link)"));
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
    char buf[64] = "";
    f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious");

    /* a link to a name that does not exist yet is not created through */
    assert_int_equal(unlink(path), 0);
    char absent[600];
    snprintf(absent, sizeof(absent), "%s/created-through-link", g_dir);
    assert_int_equal(symlink(absent, path), 0);
    assert_int_equal(cost_model_save(path, &fit, 1, err, sizeof(err)), -1);
    struct stat st;
    assert_int_equal(stat(absent, &st), -1);
    unsetenv("XDG_CACHE_HOME");
}

static void test_not_regular(void **state)
{
    char path[600], err[1200];
    in_dir(path, sizeof(path), "fifo-model.json");
    assert_int_equal(mkfifo(path, 0600), 0);
    struct cost_fit fit = fit_of(2, 5), got;
    alarm(HANG_LIMIT_S);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
    assert_int_equal(cost_model_save(path, &fit, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "fifo-model.json: not a regular file (a FIFO)"));
    alarm(0);
}

/* Runs fn in a child process as `nobody` when this is root (else as this
 * user); returns the child's exit status. */
static int as_other_user(int (*fn)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
            _exit(3);
        _exit(fn());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* XDG_CACHE_HOME inside a folder this user cannot write: the mkdir's
 * error, naming the folder, not the open's ENOENT. */
static int save_in_read_only(void)
{
    char path[1024], err[1200];
    if (!cost_model_path(path, sizeof(path)))
        return 4;
    struct cost_fit fit = fit_of(2, 5);
    if (cost_model_save(path, &fit, 1, err, sizeof(err)) != -1)
        return 5;
    if (!strstr(err, "ro/cache: Permission denied")) {
        fprintf(stderr, "got '%s'\n", err);
        return 6;
    }
    return 0;
}

static void test_read_only_folder(void **state)
{
    char ro[512], cache[600];
    in_dir(ro, sizeof(ro), "ro");
    assert_int_equal(mkdir(ro, 0555), 0);
    snprintf(cache, sizeof(cache), "%s/cache", ro);
    setenv("XDG_CACHE_HOME", cache, 1);
    assert_int_equal(as_other_user(save_in_read_only), 0);
    unsetenv("XDG_CACHE_HOME");
}

/* Another user's file at the cache's name is neither read nor replaced
 * (`test_cost_model other_owner`: only root can make another user's file,
 * so anyone else gets SKIPPED from ctest). */
static void test_other_owner(void **state)
{
    char path[600], err[1200];
    in_dir(path, sizeof(path), "theirs.json");
    struct cost_fit fit = fit_of(2, 5), got;
    assert_int_equal(cost_model_save(path, &fit, 1, err, sizeof(err)), 0);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), 0);
    assert_int_equal(chown(path, NOBODY, NOBODY), 0);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
    assert_int_equal(cost_model_save(path, &fit, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "theirs.json: owned by another user (uid 65534), not read"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, NOBODY);
}

static void test_find_in_text(void **state)
{
    static const char text[] = "{\"fits\":[{\"backend\":\"shm\",\"algo\":\"ring\",\"ranks\":2,\"collective\":"
                               "\"allreduce\",\"alpha_us\":3.5,\"beta_us_per_byte\":0.001,\"r2\":0.9}]}";
    struct cost_fit got;
    assert_int_equal(cost_model_find(text, strlen(text), "shm", "ring", 2, COLL_ALLREDUCE, &got), 0);
    assert_true(got.alpha_us == 3.5);
    assert_true(got.valid);
    assert_int_equal(cost_model_find(text, strlen(text), "shm", "ring", 3, COLL_ALLREDUCE, &got), -1);
    assert_int_equal(cost_model_find(text, 10, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
    assert_int_equal(cost_model_find("[]", 2, "shm", "ring", 2, COLL_ALLREDUCE, &got), -1);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "other_owner") != 0) {
            fprintf(stderr, "usage: %s [other_owner]\n", argv[0]);
            return 2;
        }
        if (geteuid() != 0) {
            printf("SKIP: only root can make a file of another user\n");
            return 77;
        }
        const struct CMUnitTest other[] = {cmocka_unit_test(test_other_owner)};
        return cmocka_run_group_tests(other, setup, teardown);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_path_shared_home),
        cmocka_unit_test(test_save_private_and_atomic),
        cmocka_unit_test(test_link_not_followed),
        cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_read_only_folder),
        cmocka_unit_test(test_find_in_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
