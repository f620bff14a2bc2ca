/* Private to src/sim: helpers the report writers share (report.c for
 * loom sim's figures, rubick_report.c for the Rubick experiment's). */
#ifndef LOOM_SIM_INT_H
#define LOOM_SIM_INT_H

#include "loom/core.h"

/* Runs `gnuplot SCRIPT` and waits for it; LOOM_EUNAVAIL when gnuplot is not
 * installed, LOOM_EIO when it fails. */
int loom_sim__gnuplot(const char *script, loom_err_t *err);

#endif
