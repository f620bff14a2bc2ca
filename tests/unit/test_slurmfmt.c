/* Slurm's output formats (loom/slurmfmt.h): squeue/sinfo format strings,
 * sacct field lists, cells as Slurm 22.05 prints them (the expected texts
 * are what Slurm printed for the same format, see
 * tests/integration/test_slurm_front.py), durations, state and reason
 * names, hostlists. */
#include "loom/slurmfmt.h"
#include "test_util.h"

#define SQUEUE "iAFKjutTMlLDCRrNPbSVQaYm"

/* The header squeue prints for fmt, each field's title being the letter
 * repeated (enough to see widths and justification). */
static char *render(const char *fmt, const char *const *values)
{
    loom_slurmfmt_t f;
    loom_err_t err;
    if (loom_slurmfmt_parse(fmt, SQUEUE, &f, &err))
        fail_msg("%s: %s", fmt, err.msg);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_append_str(&b, f.prefix);
    for (size_t i = 0; i < f.n; i++) {
        loom_slurmfmt_cell(&b, values[i], f.fields[i].width, f.fields[i].right);
        loom_buf_append_str(&b, f.fields[i].suffix);
    }
    loom_slurmfmt_free(&f);
    return loom_buf_detach(&b);
}

static void squeue_default_format(void **state)
{
    /* squeue's default header, as Slurm 22.05 prints it */
    const char *titles[] = {"JOBID", "PARTITION", "NAME",  "USER",
                            "ST",    "TIME",      "NODES", "NODELIST(REASON)"};
    char *h = render("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", titles);
    assert_string_equal(h, "             JOBID PARTITION     NAME     USER ST       TIME  NODES "
                           "NODELIST(REASON)");
    free(h);
    const char *row[] = {"5_[0-5%2]", "debug", "a-long-name", "root",
                         "PD",        "0:00",  "1",           "(Priority)"};
    h = render("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", row);
    assert_string_equal(h, "         5_[0-5%2]     debug a-long-n     root PD       0:00      1 "
                           "(Priority)");
    free(h);
}

static void widths_and_justification(void **state)
{
    /* left by default, '.' right, cut to the width either way, no width:
     * as it is; the text around the fields kept */
    const char *v[] = {"5_[0-5%2]", "wrap", "wrap", "PENDING", "1"};
    char *h = render("%5i|%.3j|%j|%10T|%.4C", v);
    assert_string_equal(h, "5_[0-|wra|wrap|PENDING   |   1");
    free(h);
    const char *w[] = {"2"};
    h = render("abc %i xyz", w);
    assert_string_equal(h, "abc 2 xyz");
    free(h);
}

static void format_parse_structure(void **state)
{
    loom_slurmfmt_t f;
    assert_int_equal(loom_slurmfmt_parse("pre%.18i, %-", SQUEUE, &f, NULL), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_parse("pre%.18i, %%%j%", SQUEUE, &f, NULL), LOOM_OK);
    assert_string_equal(f.prefix, "pre");
    assert_int_equal(f.n, 2); /* "%%" and the '%' at the end are skipped, as Slurm */
    assert_int_equal(f.fields[0].letter, 'i');
    assert_int_equal(f.fields[0].width, 18);
    assert_true(f.fields[0].right);
    assert_string_equal(f.fields[0].suffix, ", ");
    assert_int_equal(f.fields[1].letter, 'j');
    assert_int_equal(f.fields[1].width, 0);
    assert_false(f.fields[1].right);
    loom_slurmfmt_free(&f);
    loom_slurmfmt_free(&f); /* twice is safe */
}

static void format_errors(void **state)
{
    loom_slurmfmt_t f;
    loom_err_t err;
    /* '-' is not squeue's: Slurm refuses it too */
    assert_int_equal(loom_slurmfmt_parse("%-12j", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'-' in '%-' is not a field letter"));
    assert_int_equal(loom_slurmfmt_parse("%.8Z", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'Z'"));
    assert_int_equal(loom_slurmfmt_parse("%12", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "no field letter"));
    assert_int_equal(loom_slurmfmt_parse("", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_parse("just text", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "no field"));
    assert_int_equal(loom_slurmfmt_parse("%99999i", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "width"));
    assert_int_equal(loom_slurmfmt_parse("%1025i", SQUEUE, &f, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_parse("%1024i", SQUEUE, &f, &err), LOOM_OK);
    loom_slurmfmt_free(&f);
    /* limits: fields and bytes */
    char many[65 * 3 + 1] = "";
    for (int i = 0; i < 65; i++)
        strcat(many, "%i ");
    assert_int_equal(loom_slurmfmt_parse(many, SQUEUE, &f, &err), LOOM_ELIMIT);
    many[64 * 3] = 0;
    assert_int_equal(loom_slurmfmt_parse(many, SQUEUE, &f, &err), LOOM_OK);
    assert_int_equal(f.n, 64);
    loom_slurmfmt_free(&f);
    char *big = malloc(LOOM_SLURMFMT_MAX_TEXT + 2);
    memset(big, 'x', LOOM_SLURMFMT_MAX_TEXT + 1);
    big[0] = '%';
    big[1] = 'i';
    big[LOOM_SLURMFMT_MAX_TEXT + 1] = 0;
    assert_int_equal(loom_slurmfmt_parse(big, SQUEUE, &f, &err), LOOM_ELIMIT);
    free(big);
}

static const char *const names[] = {"JobID", "JobName", "Start", "State", "ExitCode", "User"};
static const int lens[] = {-12, 10, 19, 10, 8, 9};

static char *sacct(const char *list, loom_slurmfmt_mode_t mode, const char *const *row)
{
    loom_slurmfmt_cols_t cols;
    loom_err_t err;
    if (loom_slurmfmt_fields(list, names, lens, 6, &cols, &err))
        fail_msg("%s: %s", list, err.msg);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_slurmfmt_sacct_header(&b, &cols, names, mode);
    for (size_t i = 0; i < cols.n; i++)
        loom_slurmfmt_sacct_cell(&b, row[i], cols.cols[i].len, mode, i + 1 == cols.n);
    return loom_buf_detach(&b);
}

static void sacct_fields(void **state)
{
    /* as sacct 22.05 printed them: titles justified as their values
     * (JobID's default and %-N left, as a real sacct's JobID title is),
     * a cut value ending in '+', a blank after every column */
    const char *row[] = {"4", "big", "CANCELLED"};
    char *s = sacct("JobID%20,JobName%-20,State%5", LOOM_SLURMFMT_COLUMNS, row);
    assert_string_equal(s, "               JobID JobName              State \n"
                           "-------------------- -------------------- ----- \n"
                           "                   4 big                  CANC+ ");
    free(s);
    const char *row2[] = {"6", "wrap", "FAILED", "3:0"};
    s = sacct("JobID,JobName,State,ExitCode", LOOM_SLURMFMT_PARSABLE2, row2);
    assert_string_equal(s, "JobID|JobName|State|ExitCode\n6|wrap|FAILED|3:0");
    free(s);
    s = sacct("JobID,State", LOOM_SLURMFMT_PARSABLE, row2);
    assert_string_equal(s, "JobID|State|\n6|wrap|");
    free(s);
    const char *row3[] = {"7", NULL, "2026-12-05T18:24:25"};
    s = sacct("jobid,jobn,st", LOOM_SLURMFMT_COLUMNS, row3); /* "st": Start, as sacct */
    assert_string_equal(s, "JobID           JobName               Start \n"
                           "------------ ---------- ------------------- \n"
                           "7                       2026-12-05T18:24:25 ");
    free(s);
}

static void sacct_field_errors(void **state)
{
    loom_slurmfmt_cols_t cols;
    loom_err_t err;
    assert_int_equal(loom_slurmfmt_fields("JobID,Bogus", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "invalid field requested: 'Bogus'"));
    assert_int_equal(loom_slurmfmt_fields("JobID%x", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_fields("JobID%", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_fields("JobID%99999", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_fields("%5", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_fields(",,", names, lens, 6, &cols, &err), LOOM_EINVAL);
    assert_int_equal(loom_slurmfmt_fields("jobid,,user%-4", names, lens, 6, &cols, &err), LOOM_OK);
    assert_int_equal(cols.n, 2);
    assert_int_equal(cols.cols[1].field, 5);
    assert_int_equal(cols.cols[1].len, -4);
    assert_int_equal(loom_slurmfmt_fields("JobID%0", names, lens, 6, &cols, &err), LOOM_OK);
    assert_int_equal(cols.cols[0].len, -12); /* %0: the default width */
}

static void durations_states_reasons(void **state)
{
    char t[32];
    assert_string_equal(loom_slurmfmt_duration(0, t), "0:00");
    assert_string_equal(loom_slurmfmt_duration(600, t), "10:00");
    assert_string_equal(loom_slurmfmt_duration(3661, t), "1:01:01");
    assert_string_equal(loom_slurmfmt_duration(90061, t), "1-01:01:01");
    assert_string_equal(loom_slurmfmt_duration(-1, t), "INVALID");
    assert_string_equal(loom_slurmfmt_elapsed(61, t), "00:01:01");
    assert_string_equal(loom_slurmfmt_elapsed(86400, t), "1-00:00:00");
    assert_string_equal(loom_slurmfmt_state("PENDING", true), "PD");
    assert_string_equal(loom_slurmfmt_state("TIMEOUT", true), "TO");
    assert_string_equal(loom_slurmfmt_state("CANCELLED", false), "CANCELLED");
    assert_null(loom_slurmfmt_state("BOGUS", true));
    assert_string_equal(loom_slurmfmt_state_parse("pd"), "PENDING");
    assert_string_equal(loom_slurmfmt_state_parse("Running"), "RUNNING");
    assert_string_equal(loom_slurmfmt_state_parse("CA"), "CANCELLED");
    assert_string_equal(loom_slurmfmt_state_parse("all"), "ALL");
    assert_null(loom_slurmfmt_state_parse("BOGUS"));
    assert_string_equal(loom_slurmfmt_reason(NULL, NULL, NULL), "None");
    assert_string_equal(loom_slurmfmt_reason("JobHeld", NULL, NULL), "JobHeldUser");
    assert_string_equal(loom_slurmfmt_reason("Resources", NULL, NULL), "Resources");
    assert_string_equal(loom_slurmfmt_reason("Reservation", NULL, NULL), "Priority");
    assert_string_equal(loom_slurmfmt_reason("QuotaLimit", "user", "gpus"), "QOSMaxGRESPerUser");
    assert_string_equal(loom_slurmfmt_reason("QuotaLimit", "account", "running"),
                        "AssocGrpJobsLimit");
}

static void hostlists(void **state)
{
    const char *a[] = {"loom3", "loom1", "loom2", "gpu07", "loom5", "head", "gpu08"};
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_slurmfmt_hostlist(&b, a, 7), LOOM_OK);
    assert_string_equal(b.data, "gpu[07-08],head,loom[1-3,5]");
    loom_buf_reset(&b);
    assert_int_equal(loom_slurmfmt_hostlist(&b, a + 1, 1), LOOM_OK);
    assert_string_equal(b.data, "loom1");
    loom_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(squeue_default_format),
        cmocka_unit_test(widths_and_justification),
        cmocka_unit_test(format_parse_structure),
        cmocka_unit_test(format_errors),
        cmocka_unit_test(sacct_fields),
        cmocka_unit_test(sacct_field_errors),
        cmocka_unit_test(durations_states_reasons),
        cmocka_unit_test(hostlists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
