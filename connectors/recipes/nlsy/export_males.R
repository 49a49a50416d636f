# export_males.R — write the NLSY "Males" panel shipped with the R package
# plm (Vella and Verbeek 1998: 545 young men observed every year 1980-1987)
# as CSV, one row per man and year, sorted by year then id so that
# `dpstream load --close-steps` sees each year's rows together.
#
# Usage: Rscript export_males.R OUT.csv
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript export_males.R OUT.csv")
suppressPackageStartupMessages(data("Males", package = "plm"))
males <- Males[order(Males$year, Males$nr), ]
stopifnot(nrow(males) == 4360, length(unique(males$nr)) == 545)
# factors are written as their labels ("no"/"yes"), which the mapping
# files turn into category indices
write.csv(males, args[1], row.names = FALSE, na = "")
cat(sprintf("export_males.R: %d rows (%d men x %d years) -> %s\n",
            nrow(males), length(unique(males$nr)), length(unique(males$year)), args[1]))
