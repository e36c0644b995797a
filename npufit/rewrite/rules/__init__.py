"""One rewrite rule per module; each exposes RULE (npufit.rewrite.base.RewriteRule)."""
