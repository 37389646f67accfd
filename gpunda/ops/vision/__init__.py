"""Spatial and detection ops: ROI pooling and align, resampling, sampling grids, MultiBox,
Proposal, box NMS, deformable convolution and PSROI pooling, correlation."""
