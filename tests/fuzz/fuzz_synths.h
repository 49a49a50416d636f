/* fuzz_synths.h — the synthesizers and configurations the restore harness
 * and its seed writer share (byte 0 of an input picks one). */
#ifndef FUZZ_SYNTHS_H
#define FUZZ_SYNTHS_H

#define FUZZ_SYNTHS 5

static const char *const FUZZ_SYNTH_NAMES[FUZZ_SYNTHS] = {"window", "cumulative", "marginal", "marginal", "marginal"};
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
};

#endif
