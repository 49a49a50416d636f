/* app_sources.c — the benchmark reuses the app layer's panel generator and
 * consumer-side views (they are not in a library: processor/app builds
 * only the dpstream binary), compiled into this executable. */
#include "app/panel_gen.c"
#include "app/longitudinal_view.c"
