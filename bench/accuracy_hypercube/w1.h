/* w1.h — Wasserstein-1 distances between two equal-size point sets in
 * [0,1]^d under the ℓ∞ metric (seed 004's metric on the cube), for
 * bench_accuracy_hypercube.  Both sets are uniform empirical measures with n
 * atoms, so W1 is an optimal assignment divided by n.
 *
 *   w1_1d          d = 1, exact: sort both, W1 = mean |x_(i) − y_(i)|.
 *   w1_assignment  any d, exact: min-cost perfect matching (shortest
 *                  augmenting paths with potentials, O(n^3)); for n up to a
 *                  few thousand.
 *   w1_grid2       d = 2, exact for the two measures rounded to the centres
 *                  of a G×G grid: on grid points, ℓ∞ distance = the number of
 *                  king moves, so the transport problem is a min-cost flow on
 *                  the king graph with unit arc costs (W1 with a graph metric
 *                  is an uncapacitated transshipment), solved exactly by the
 *                  primal network simplex.  Rounding moves each point by at
 *                  most 1/(2G); *disc receives the exact mean displacement of
 *                  both sets, a bound on |w1_grid2 − W1| (triangle inequality).
 */
#ifndef BENCH_W1_H
#define BENCH_W1_H

#include <stddef.h>

double w1_1d(double *x, double *y, size_t n);   /* sorts x and y in place */
double w1_assignment(const double *x, const double *y, size_t n, unsigned d);
double w1_grid2(const double *x, const double *y, size_t n, unsigned G, double *disc);

/* The network simplex on its own (tests): king-graph transport cost, in grid
 * steps, of integer supplies b[0..G*G) summing to 0. */
long long w1_king_flow(const long long *b, unsigned G);

#endif
