"""Tests of the Reporting API v2 client and the reference receiver."""
