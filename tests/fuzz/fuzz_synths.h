/* fuzz_synths.h — the synthesizers and configurations the restore harness
 * and its seed writer share (byte 0 of an input picks one). */
#ifndef FUZZ_SYNTHS_H
#define FUZZ_SYNTHS_H

#define FUZZ_SYNTHS 7

static const char *const FUZZ_SYNTH_NAMES[FUZZ_SYNTHS] = {"window", "cumulative", "marginal", "marginal", "marginal",
                                                         "spatial", "spatial"};
static const char *const FUZZ_SYNTH_CONFIGS[FUZZ_SYNTHS] = {
    "{\"horizon\":6,\"k\":2,\"rho\":1}",
    "{\"horizon\":6,\"rho\":1}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
    "{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],\"horizon\":6,\"epsilon\":1,\"selections_per_step\":2,"
    "\"counter\":\"tree\",\"max_release_rows\":10000}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]}],"
    "\"horizon\":6,\"rho\":1,\"method\":\"mwem\",\"max_rows_per_user\":2,\"max_release_rows\":10000}",
    "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},"
    "{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],\"horizon\":6,\"epsilon\":2,\"selections_per_step\":2,"
    "\"fit\":\"pgm\",\"max_release_rows\":10000}",
    "{\"epsilon\":1,\"max_depth\":8,\"max_nodes\":4001,\"max_release_points\":10000,\"init_steps\":2}",
    "{\"epsilon\":2,\"box\":[[-1,1],[0,4],[0,1]],\"variant\":\"paper\",\"horizon\":6,"
    "\"counter\":{\"kind\":\"block\",\"block\":2},\"sensitivity\":3,\"max_release_points\":10000}",
};

/* The kind of synthesizer entry `which` is: 0 panel, 1 table, 2 points. */
static inline int fuzz_synth_family(int which) { return which < 2 ? 0 : which < 5 ? 1 : 2; }

#endif
