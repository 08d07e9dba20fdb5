"""The tidy frame every reader of measurements returns (perfsweep.modeling.extrap_io, perfsweep.cube): one row
per point, region, metric and repetition, the parameters in columns of their own before COLUMNS."""

COLUMNS = ["region", "metric", "repetition", "value"]
