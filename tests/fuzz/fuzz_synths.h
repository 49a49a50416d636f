/* fuzz_synths.h — the synthesizers and configurations the restore harness
 * and its seed writer share (byte 0 of an input picks one). */
#ifndef FUZZ_SYNTHS_H
#define FUZZ_SYNTHS_H

#define FUZZ_SYNTHS 12

static const char *const FUZZ_SYNTH_NAMES[FUZZ_SYNTHS] = {"window", "cumulative", "marginal", "marginal", "marginal",
                                                         "spatial", "spatial", "adaptive", "adaptive",
                                                         "hypercube", "hypercube", "marginal"};
static const char *const FUZZ_SYNTH_CONFIGS[FUZZ_SYNTHS] = {
    "{\"horizon\":6,\"k\":2,\"rho\":1}",
    "{\"horizon\":6,\"rho\":1}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
    "{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],\"horizon\":6,\"epsilon\":1,\"selections_per_step\":2,"
    "\"counter\":\"tree\",\"max_release_rows\":10000,\"method\":\"select_measure_fit\"}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]}],"
    "\"horizon\":6,\"rho\":1,\"method\":\"mwem\",\"max_rows_per_user\":2,\"max_release_rows\":10000}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
    "{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],\"horizon\":6,\"epsilon\":2,\"selections_per_step\":2,"
    "\"fit\":\"pgm\",\"max_release_rows\":10000,\"method\":\"select_measure_fit\"}",
    "{\"epsilon\":1,\"max_depth\":8,\"max_nodes\":4001,\"max_release_points\":10000,\"init_steps\":2,"
    "\"output\":\"delta\"}",
    "{\"epsilon\":2,\"box\":[[-1,1],[0,4],[0,1]],\"unsafe_paper_variant\":true,\"horizon\":6,"
    "\"counter\":{\"kind\":\"block\",\"block\":2},\"sensitivity\":3,\"max_release_points\":10000,"
    "\"max_nodes\":2001}",
    "{\"categories\":3,\"epsilon\":1,\"horizon\":6,\"n_min\":3,\"max_releases\":3,\"decision_fraction\":0.3,"
    "\"unsafe_paper_variant\":true}",
    "{\"categories\":3,\"epsilon\":1,\"horizon\":6,\"method\":\"ba\",\"privacy\":\"w_event\",\"w\":3}",
    "{\"epsilon\":2,\"points_per_step\":5,\"max_depth\":6,\"max_release_points\":10000}",
    "{\"epsilon\":4,\"dims\":1,\"points_per_step\":5,\"max_depth\":6,\"output\":\"delta\"}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
    "{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],\"horizon\":6,\"epsilon\":20,\"method\":\"forest\","
    "\"counter\":\"tree\",\"max_release_rows\":10000}",
};

/* The kind of synthesizer entry `which` is: 0 reports, 1 table rows, 2 points, 3 reported points. */
static inline int fuzz_synth_family(int which)
{
    return which == 11 ? 1 : which >= 9 ? 3 : which < 2 || which >= 7 ? 0 : which < 5 ? 1 : 2;
}

/* The dimension of entry `which`'s points. */
static inline int fuzz_synth_dims(int which) { return which == 5 || which == 9 ? 2 : which == 10 ? 1 : 3; }

#endif
