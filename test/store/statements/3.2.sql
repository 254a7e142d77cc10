-- Every statement airlock prepares on an Airflow 3.2 database (Airflow defaults).
-- Written by `npm run statements`; test/store/statementFiles.unit.test.ts fails when it is stale.
-- Capabilities: {"eventPartitionKey":true,"partitionedTimetables":true,"maxRunsFlag":true,"partitionStep":"all_pending","queueShape":"per_asset","multiTeam":false,"inletReferences":true,"taskStateTable":null,"consumerFilter":"all_skip_paused","eventPartitionKeys":false,"missingPartitionKeyLog":true,"aliasAssetShape":"declared","eventWindow":"assets_and_aliases","teamFilter":false,"clearTaskStateOnSuccess":false}

-- airlock_downstream_asset_keys_025dc3f61d9a
select id, name, uri from asset where id = any($1::int[]);

-- airlock_downstream_partitioned_flag_per_asset_33f78e7cfbb9
select (with consumer_dag as materialized (
  -- Materialized: the consumers first (a handful), then each one's facts, never every DAG's.
  select d.* from dag d where d.dag_id in (select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any($1::int[])
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any($2::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any($1::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any($1::int[]))
)
-- The scheduler keeps a DAG whose flag is false (is_paused == false(), ~is_stale,
-- has_import_errors == false()): a NULL flag excludes it as much as true does.
select coalesce(json_agg(json_build_object(
         'dag_id', d.dag_id, 'paused', d.is_paused is not false, 'stale', d.is_stale is not false,
         'import_errors', d.has_import_errors is not false, 'max_active_runs', d.max_active_runs,
         'active_runs', (select count(*) from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')),
         'partitioned', coalesce(d.timetable_partitioned, false), 'max_runs_flag', d.exceeds_max_non_backfill is true,
         'dag_hash', sd.dag_hash, 'timetable', sd.timetable, 'data_compressed', encode(sd.data_compressed, 'base64'),
         'queued', queue_rows.queued, 'inactive', queue_rows.inactive,
         -- From the alias links (few), each checked against the DAG's queue by its key; not
         -- read for a known condition without an alias leaf, which never looks at them.
         'aliases', case when not (sd.dag_hash is not null and not coalesce(sd.dag_hash = any($4::text[]), false) and not coalesce(d.timetable_partitioned, false)) or sd.dag_hash = any($6::text[]) then '{}'::varchar[]
                         else array(select distinct al.name from asset_alias al join asset_alias_asset l on l.alias_id = al.id
                                     where l.asset_id in (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id) order by 1) end
       ) order by d.dag_id), '[]')
  from consumer_dag d
  -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
  -- reads the whole document (json, parsed; jsonb from 3.2, detoasted), megabytes for a large DAG.
  left join lateral (
    select s.dag_hash,
           case when s.dag_hash = any($3::text[]) then null else s.data -> 'dag' -> 'timetable' end as timetable,
           case when s.dag_hash = any($3::text[]) or s.data is not null then null else s.data_compressed end as data_compressed
      from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
  ) as sd on true
  -- The queued assets as ids (a few bytes each; the process reads each id's name and uri once),
  -- no string of the condition bound and none of the queue's matched in SQL. Whether each is
  -- active only for a condition with a ref leaf (or one the process has not parsed yet).
  cross join lateral (
    select case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($4::text[]), false) and not coalesce(d.timetable_partitioned, false) then array(select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id) else '{}'::int[] end as queued,
           case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($4::text[]), false) and not coalesce(d.timetable_partitioned, false) and not coalesce(sd.dag_hash = any($5::text[]), false)
                then array(select q.asset_id from (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id) as q join asset a on a.id = q.asset_id
                            where not exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri))
                else '{}'::int[] end as inactive
  ) as queue_rows) as facts;

-- airlock_read_ti_id_outlets_451b5e8856aa
select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
      dr.id as dag_run_id, dr.logical_date, dr.partition_key as partition_key, d.owners, ti.dag_version_id,
      sd.dag_hash as dag_hash,
      case when sd.id is null then (select json_agg(json_build_object('id', a.id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null) order by a.id)
    from task_outlet_asset_reference r
    join asset a on a.id = r.asset_id
    left join asset_active aa on aa.name = a.name and aa.uri = a.uri
   where r.dag_id = ti.dag_id and r.task_id = ti.task_id) end as legacy_outlets
 from task_instance ti
 join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
 left join dag d on d.dag_id = ti.dag_id
 left join serialized_dag sd on sd.dag_version_id = ti.dag_version_id

where ti.id = $1::uuid;

-- airlock_read_ti_id_outlets_guessed_63ed82a6ddbc
select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
       dr.id as dag_run_id, dr.logical_date, dr.partition_key as partition_key, d.owners, ti.dag_version_id,
       sd.dag_hash as dag_hash,
       case when sd.id is null then (select json_agg(json_build_object('id', a.id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null) order by a.id)
     from task_outlet_asset_reference r
     join asset a on a.id = r.asset_id
     left join asset_active aa on aa.name = a.name and aa.uri = a.uri
    where r.dag_id = ti.dag_id and r.task_id = ti.task_id) end as legacy_outlets,
       g.ids as guessed_ids, g.names as guessed_names, g.uris as guessed_uris, g.active as guessed_active
  from task_instance ti
  join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
  left join dag d on d.dag_id = ti.dag_id
  left join serialized_dag sd on sd.dag_version_id = ti.dag_version_id
  left join lateral (
    select array_agg(r.id order by r.n) as ids, array_agg(r.name order by r.n) as names,
           array_agg(r.uri order by r.n) as uris, array_agg(r.active order by r.n) as active
      from (with d as (
  select * from unnest($5::text[], $6::text[], $7::text[]) with ordinality as d(kind, name, uri, n)
), matched as (
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'asset' and a.name = d.name and a.uri = d.uri
  union all
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'name_ref' and a.name = d.name
  union all
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'uri_ref' and a.uri = d.uri
), best as (
  select distinct on (m.n) m.n, m.id, m.name, m.uri, aa.name is not null as active
    from matched m
    left join asset_active aa on aa.name = m.name and aa.uri = m.uri
   order by m.n, aa.name is null, m.id
)
select d.n, b.id, coalesce(b.name, d.name) as name, coalesce(b.uri, d.uri) as uri, coalesce(b.active, false) as active
  from d left join best b on b.n = d.n
 order by d.n) as r
  ) as g on sd.dag_hash = $3 and ti.dag_version_id = $2::uuid and ti.task_id = $4
 where ti.id = $1::uuid;

-- airlock_read_ti_id_1d5850bf8a79
select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
      dr.id as dag_run_id, dr.logical_date, dr.partition_key as partition_key, d.owners, ti.dag_version_id,
      null::varchar as dag_hash,
      null::json as legacy_outlets
 from task_instance ti
 join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
 left join dag d on d.dag_id = ti.dag_id


where ti.id = $1::uuid;

-- airlock_read_ti_key_outlets_3fc694bf2c1b
select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
      dr.id as dag_run_id, dr.logical_date, dr.partition_key as partition_key, d.owners, ti.dag_version_id,
      sd.dag_hash as dag_hash,
      case when sd.id is null then (select json_agg(json_build_object('id', a.id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null) order by a.id)
    from task_outlet_asset_reference r
    join asset a on a.id = r.asset_id
    left join asset_active aa on aa.name = a.name and aa.uri = a.uri
   where r.dag_id = ti.dag_id and r.task_id = ti.task_id) end as legacy_outlets
 from task_instance ti
 join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
 left join dag d on d.dag_id = ti.dag_id
 left join serialized_dag sd on sd.dag_version_id = ti.dag_version_id

where ti.dag_id = $1 and ti.run_id = $2 and ti.task_id = $3 and ti.map_index = $4;

-- airlock_read_ti_key_ca5cc2be263a
select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
      dr.id as dag_run_id, dr.logical_date, dr.partition_key as partition_key, d.owners, ti.dag_version_id,
      null::varchar as dag_hash,
      null::json as legacy_outlets
 from task_instance ti
 join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
 left join dag d on d.dag_id = ti.dag_id


where ti.dag_id = $1 and ti.run_id = $2 and ti.task_id = $3 and ti.map_index = $4;

-- airlock_serialized_dag_fce6befda08c
select data::text as data, data_compressed from serialized_dag where dag_version_id = $1::uuid;

-- airlock_resolve_outlets_5bb394bf08c4
with d as (
  select * from unnest($1::text[], $2::text[], $3::text[]) with ordinality as d(kind, name, uri, n)
), matched as (
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'asset' and a.name = d.name and a.uri = d.uri
  union all
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'name_ref' and a.name = d.name
  union all
  select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'uri_ref' and a.uri = d.uri
), best as (
  select distinct on (m.n) m.n, m.id, m.name, m.uri, aa.name is not null as active
    from matched m
    left join asset_active aa on aa.name = m.name and aa.uri = m.uri
   order by m.n, aa.name is null, m.id
)
select d.n, b.id, coalesce(b.name, d.name) as name, coalesce(b.uri, d.uri) as uri, coalesce(b.active, false) as active
  from d left join best b on b.n = d.n
 order by d.n;

-- airlock_archived_ti_key_90a65326e739
select dag_id, run_id, task_id, map_index from task_instance_history where task_instance_id = $1::uuid order by try_number desc limit 1;

-- airlock_lock_ti_935f7503ec1c
select state, try_number, xmin::text as xmin from task_instance where id = $1 for update;

-- airlock_ti_row_holder_d83f067898e3
select a.pid, a.application_name, a.xact_start, a.state, a.usename::text as usename
 from task_instance t join pg_stat_activity a on a.backend_xid::text = t.xmax::text
where t.id = $1 and t.xmax::text <> '0';

-- airlock_mark_ti_success_4d5c46ed6dbb
update task_instance ti
  set state = 'success', end_date = stamp.end_date,
      start_date = coalesce(ti.start_date, stamp.end_date),
      -- Never negative: an end before the start is refused unless forced, and then recorded as 0.
      duration = greatest(0, extract(epoch from (stamp.end_date - coalesce(ti.start_date, stamp.end_date)))),
      next_method = null, next_kwargs = null, updated_at = clock_timestamp()
 from (select coalesce($1::timestamptz, ended.end_date, clock_timestamp()) as end_date
         from task_instance ended where ended.id = $2::uuid) as stamp
where ti.id = $2::uuid;

-- airlock_insert_events_logged_b8137e629bac
with event as (
  insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp", partition_key)
  select e.asset_id, e.extra, $1::varchar, $2::varchar, $3::varchar, $4::int, now.ts, e.partition_key
    from rows from (unnest($5::int[]), json_array_elements($6::json), unnest($7::varchar[]))
         with ordinality as e(asset_id, extra, partition_key, n)
   cross join (select clock_timestamp() as ts) as now
   order by e.n
  returning id
), written as (
  -- The events' ids in the input's order, once: one JSON array (one row parses in a fraction
  -- of the time hundreds of rows take), for the audit row's extra and for the caller.
  select coalesce(array_to_json(array_agg(id order by id)), '[]') as ids from event
), image as (
  -- The writer's before-image (complete's: the task instance as this statement reads it, the
  -- transaction id of its row version with it), put into the extra in place of its stand-in.
  select (jsonb_build_object('version', 1, 'task_instance', to_jsonb(t) - 'xmin')
            || coalesce($8::jsonb, '{}'::jsonb))::text as doc, t.xmin
    from (select ti.id, ti.xmin::text as xmin, ti.try_number, ti.state, ti.start_date, ti.end_date, ti.duration,
                 ti.updated_at, ti.next_method, ti.next_kwargs is not null as next_kwargs_set
            from task_instance ti where ti.id = $9::uuid) as t
), audit as (
  -- Read from an aggregate over the events (one row even for none): its clock_timestamp() is
  -- read once they are written, so the row is stamped after its events, as when it was next.
  insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
  select clock_timestamp(), $1::varchar, $3::varchar, $2::varchar, $4::int,
         $10::int, $11::varchar, $12::timestamptz, $13::varchar,
         replace($14::text || written.ids::text || $15::text,
                 $16::text, coalesce((select doc from image), $16::text))
    from written
  returning id
)
select audit.id as log_id, written.ids as event_ids, (select xmin from image) as image_xmin from audit, written;

-- airlock_assets_by_name_or_uri_5152f76de9ea
select s.value, a.name, a.uri
  from unnest($1::text[]) as s(value)
  join asset a on a.name = s.value
union
select s.value, a.name, a.uri
  from unnest($1::text[]) as s(value)
  join asset a on a.uri = s.value
order by 1, 2, 3;

-- airlock_alias_create_aliases_b19a59e892f4
insert into asset_alias (name, "group")
select distinct n.name, '' from unnest($1::text[]) as n(name) order by 1
on conflict do nothing;

-- airlock_alias_create_assets_declared_7e1445eca94f
insert into asset (name, uri, "group", extra, created_at, updated_at)
select wanted.asset_name, wanted.asset_uri, 'asset', wanted.asset_extra, clock_timestamp(), clock_timestamp()
  from (select distinct on (i.asset_name, i.asset_uri) i.asset_name, i.asset_uri, i.asset_extra
          from rows from (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), json_array_elements($4::json))
               with ordinality as i(alias_name, asset_name, asset_uri, asset_extra, n)
          join asset_alias al on al.name = i.alias_name
         order by i.asset_name, i.asset_uri, i.n) as wanted
 order by 1, 2
on conflict (name, uri) do nothing;

-- airlock_alias_link_assets_cdd1d7b6124b
with resolved as (
  select al.id as alias_id, i.alias_name, a.id as asset_id, i.asset_name, i.asset_uri
    from unnest($1::text[], $2::text[], $3::text[]) as i(alias_name, asset_name, asset_uri)
    join asset_alias al on al.name = i.alias_name
    join asset a on a.name = i.asset_name and a.uri = i.asset_uri
), linked as (
  insert into asset_alias_asset (alias_id, asset_id)
  select distinct alias_id, asset_id from resolved order by 1, 2
  on conflict do nothing
)
select * from resolved;

-- airlock_alias_event_links_0d7d6307e4d0
insert into asset_alias_asset_event (alias_id, event_id)
select * from unnest($1::int[], $2::int[]) as l(alias_id, event_id) order by 1, 2
on conflict do nothing;

-- airlock_queue_per_asset_all_skip_paused_6c7a955762b0
with reference as (
  -- UNION ALL: each branch's rows are distinct already (one reference row per DAG and
  -- asset, alias, name or uri), and consumer takes the distinct queue keys anyway.
  select ev.asset_id, r.dag_id, 'id' as kind, null::int as alias_id from unnest($1::int[]) as ev(asset_id) join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
  union all
  select ev.asset_id, r.dag_id, 'alias', ev.alias_id from unnest($2::int[], $3::int[]) as ev(asset_id, alias_id) join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
  union all
  select ev.asset_id, r.dag_id, 'name', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
  union all
  select ev.asset_id, r.dag_id, 'uri', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
), consumer as (
  -- With the alias a consumer was reached through (null: by the asset itself), so a caller can
  -- tell which events reach a DAG the release does not queue. Not distinct here: the queue
  -- insert and the rows returned each take their own distinct keys, one sort each.
  select reference.asset_id, reference.dag_id, reference.alias_id,
         case when coalesce(d.timetable_partitioned, false) then (case when $4::boolean then 'not_queued_by_airflow' else 'partition_mapper' end)
              when $4::boolean then 'queued'
              else 'not_queued_by_airflow' end as kind
    from reference
    join dag d on d.dag_id = reference.dag_id

   where not (d.is_paused is not false)
), queued as (
  insert into asset_dag_run_queue (asset_id, target_dag_id, created_at)
  select asset_id, dag_id, clock_timestamp() from (select distinct asset_id, dag_id from consumer where kind = 'queued') as k
   order by asset_id, dag_id
  on conflict (asset_id, target_dag_id) do nothing
  returning asset_id, target_dag_id
)
-- Unsorted: callers count the rows and sort the DAG names they report.
select 'queued' as kind, asset_id, target_dag_id as dag_id, null::int as alias_id, null::json as downstream, null::boolean as raced from queued
union all
select kind, asset_id, dag_id, alias_id, null, null from (select distinct kind, asset_id, dag_id, alias_id from consumer where kind <> 'queued') as c;

-- airlock_queue_per_asset_all_skip_paused_preview_4a284d73845a
with reference as (
  -- UNION ALL: each branch's rows are distinct already (one reference row per DAG and
  -- asset, alias, name or uri), and consumer takes the distinct queue keys anyway.
  select ev.asset_id, r.dag_id, 'id' as kind, null::int as alias_id from unnest($1::int[]) as ev(asset_id) join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
  union all
  select ev.asset_id, r.dag_id, 'alias', ev.alias_id from unnest($2::int[], $3::int[]) as ev(asset_id, alias_id) join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
  union all
  select ev.asset_id, r.dag_id, 'name', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
  union all
  select ev.asset_id, r.dag_id, 'uri', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
), consumer as (
  -- With the alias a consumer was reached through (null: by the asset itself), so a caller can
  -- tell which events reach a DAG the release does not queue. Not distinct here: the queue
  -- insert and the rows returned each take their own distinct keys, one sort each.
  select reference.asset_id, reference.dag_id, reference.alias_id,
         case when coalesce(d.timetable_partitioned, false) then (case when $4::boolean then 'not_queued_by_airflow' else 'partition_mapper' end)
              when $4::boolean then 'queued'
              else 'not_queued_by_airflow' end as kind
    from reference
    join dag d on d.dag_id = reference.dag_id

   where not (d.is_paused is not false)
), queued as (
  insert into asset_dag_run_queue (asset_id, target_dag_id, created_at)
  select asset_id, dag_id, clock_timestamp() from (select distinct asset_id, dag_id from consumer where kind = 'queued') as k
   order by asset_id, dag_id
  on conflict (asset_id, target_dag_id) do nothing
  returning asset_id, target_dag_id
)
-- Unsorted: callers count the rows and sort the DAG names they report.
select 'queued' as kind, asset_id, target_dag_id as dag_id, null::int as alias_id, null::json as downstream, null::boolean as raced from queued
union all
select kind, asset_id, dag_id, alias_id, null, null from (select distinct kind, asset_id, dag_id, alias_id from consumer where kind <> 'queued') as c
union all
select 'downstream', null, null, null, (with consumer_dag as materialized (
  -- Materialized: the consumers first (a handful), then each one's facts, never every DAG's.
  select d.* from dag d where d.dag_id in (select dag_id from reference
  union
  select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any($5::int[])
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any($6::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any($5::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any($5::int[]))
)
-- The scheduler keeps a DAG whose flag is false (is_paused == false(), ~is_stale,
-- has_import_errors == false()): a NULL flag excludes it as much as true does.
select coalesce(json_agg(json_build_object(
         'dag_id', d.dag_id, 'paused', d.is_paused is not false, 'stale', d.is_stale is not false,
         'import_errors', d.has_import_errors is not false, 'max_active_runs', d.max_active_runs,
         'active_runs', (select count(*) from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')),
         'partitioned', coalesce(d.timetable_partitioned, false), 'max_runs_flag', d.exceeds_max_non_backfill is true,
         'dag_hash', sd.dag_hash, 'timetable', sd.timetable, 'data_compressed', encode(sd.data_compressed, 'base64'),
         'queued', queue_rows.queued, 'inactive', queue_rows.inactive,
         -- From the alias links (few), each checked against the DAG's queue by its key; not
         -- read for a known condition without an alias leaf, which never looks at them.
         'aliases', case when not (sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false)) or sd.dag_hash = any($10::text[]) then '{}'::varchar[]
                         else array(select distinct al.name from asset_alias al join asset_alias_asset l on l.alias_id = al.id
                                     where l.asset_id in (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) order by 1) end
       ) order by d.dag_id), '[]')
  from consumer_dag d
  -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
  -- reads the whole document (json, parsed; jsonb from 3.2, detoasted), megabytes for a large DAG.
  left join lateral (
    select s.dag_hash,
           case when s.dag_hash = any($7::text[]) then null else s.data -> 'dag' -> 'timetable' end as timetable,
           case when s.dag_hash = any($7::text[]) or s.data is not null then null else s.data_compressed end as data_compressed
      from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
  ) as sd on true
  -- The queued assets as ids (a few bytes each; the process reads each id's name and uri once),
  -- no string of the condition bound and none of the queue's matched in SQL. Whether each is
  -- active only for a condition with a ref leaf (or one the process has not parsed yet).
  cross join lateral (
    select case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false) then array(select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) else '{}'::int[] end as queued,
           case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false) and not coalesce(sd.dag_hash = any($9::text[]), false)
                then array(select q.asset_id from (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) as q join asset a on a.id = q.asset_id
                            where not exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri))
                else '{}'::int[] end as inactive
  ) as queue_rows),
       (select count(*) from (select k.asset_id, k.dag_id from consumer k where k.kind = 'queued'
                   except select q.asset_id, q.target_dag_id from queued q) as k)
         > (select count(*) from (select k.asset_id, k.dag_id from consumer k where k.kind = 'queued'
                   except select q.asset_id, q.target_dag_id from queued q) as k
             where exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id));

-- airlock_plan_queue_per_asset_all_skip_paused_d668094adb9b
with reference as (
  -- UNION ALL: each branch's rows are distinct already (one reference row per DAG and
  -- asset, alias, name or uri), and consumer takes the distinct queue keys anyway.
  select ev.asset_id, r.dag_id, 'id' as kind, null::int as alias_id from unnest($1::int[]) as ev(asset_id) join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
  union all
  select ev.asset_id, r.dag_id, 'alias', ev.alias_id from unnest($2::int[], $3::int[]) as ev(asset_id, alias_id) join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
  union all
  select ev.asset_id, r.dag_id, 'name', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
  union all
  select ev.asset_id, r.dag_id, 'uri', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
), consumer as (
  -- With the alias a consumer was reached through (null: by the asset itself), so a caller can
  -- tell which events reach a DAG the release does not queue. Not distinct here: the queue
  -- insert and the rows returned each take their own distinct keys, one sort each.
  select reference.asset_id, reference.dag_id, reference.alias_id,
         case when coalesce(d.timetable_partitioned, false) then (case when $4::boolean then 'not_queued_by_airflow' else 'partition_mapper' end)
              when $4::boolean then 'queued'
              else 'not_queued_by_airflow' end as kind
    from reference
    join dag d on d.dag_id = reference.dag_id

   where not (d.is_paused is not false)
), queued as (
  select distinct k.asset_id, k.dag_id as target_dag_id from consumer k
   where k.kind = 'queued'
     and not exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id)
)
-- Unsorted: callers count the rows and sort the DAG names they report.
select 'queued' as kind, asset_id, target_dag_id as dag_id, null::int as alias_id, null::json as downstream, null::boolean as raced from queued
union all
select kind, asset_id, dag_id, alias_id, null, null from (select distinct kind, asset_id, dag_id, alias_id from consumer where kind <> 'queued') as c;

-- airlock_plan_queue_per_asset_all_skip_paused_previ_5cb8a177cb53
with reference as (
  -- UNION ALL: each branch's rows are distinct already (one reference row per DAG and
  -- asset, alias, name or uri), and consumer takes the distinct queue keys anyway.
  select ev.asset_id, r.dag_id, 'id' as kind, null::int as alias_id from unnest($1::int[]) as ev(asset_id) join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
  union all
  select ev.asset_id, r.dag_id, 'alias', ev.alias_id from unnest($2::int[], $3::int[]) as ev(asset_id, alias_id) join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
  union all
  select ev.asset_id, r.dag_id, 'name', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
  union all
  select ev.asset_id, r.dag_id, 'uri', null from unnest($1::int[]) as ev(asset_id) join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
), consumer as (
  -- With the alias a consumer was reached through (null: by the asset itself), so a caller can
  -- tell which events reach a DAG the release does not queue. Not distinct here: the queue
  -- insert and the rows returned each take their own distinct keys, one sort each.
  select reference.asset_id, reference.dag_id, reference.alias_id,
         case when coalesce(d.timetable_partitioned, false) then (case when $4::boolean then 'not_queued_by_airflow' else 'partition_mapper' end)
              when $4::boolean then 'queued'
              else 'not_queued_by_airflow' end as kind
    from reference
    join dag d on d.dag_id = reference.dag_id

   where not (d.is_paused is not false)
), queued as (
  select distinct k.asset_id, k.dag_id as target_dag_id from consumer k
   where k.kind = 'queued'
     and not exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id)
)
-- Unsorted: callers count the rows and sort the DAG names they report.
select 'queued' as kind, asset_id, target_dag_id as dag_id, null::int as alias_id, null::json as downstream, null::boolean as raced from queued
union all
select kind, asset_id, dag_id, alias_id, null, null from (select distinct kind, asset_id, dag_id, alias_id from consumer where kind <> 'queued') as c
union all
select 'downstream', null, null, null, (with consumer_dag as materialized (
  -- Materialized: the consumers first (a handful), then each one's facts, never every DAG's.
  select d.* from dag d where d.dag_id in (select dag_id from reference
  union
  select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any($5::int[])
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any($6::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any($5::int[])
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any($5::int[]))
)
-- The scheduler keeps a DAG whose flag is false (is_paused == false(), ~is_stale,
-- has_import_errors == false()): a NULL flag excludes it as much as true does.
select coalesce(json_agg(json_build_object(
         'dag_id', d.dag_id, 'paused', d.is_paused is not false, 'stale', d.is_stale is not false,
         'import_errors', d.has_import_errors is not false, 'max_active_runs', d.max_active_runs,
         'active_runs', (select count(*) from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')),
         'partitioned', coalesce(d.timetable_partitioned, false), 'max_runs_flag', d.exceeds_max_non_backfill is true,
         'dag_hash', sd.dag_hash, 'timetable', sd.timetable, 'data_compressed', encode(sd.data_compressed, 'base64'),
         'queued', queue_rows.queued, 'inactive', queue_rows.inactive,
         -- From the alias links (few), each checked against the DAG's queue by its key; not
         -- read for a known condition without an alias leaf, which never looks at them.
         'aliases', case when not (sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false)) or sd.dag_hash = any($10::text[]) then '{}'::varchar[]
                         else array(select distinct al.name from asset_alias al join (select alias_id, asset_id from asset_alias_asset union select h.alias_id, h.asset_id from (select ev.alias_id, ev.asset_id from unnest($2::int[], $3::int[]) as ev(asset_id, alias_id)) as h) l on l.alias_id = al.id
                                     where l.asset_id in (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) order by 1) end
       ) order by d.dag_id), '[]')
  from consumer_dag d
  -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
  -- reads the whole document (json, parsed; jsonb from 3.2, detoasted), megabytes for a large DAG.
  left join lateral (
    select s.dag_hash,
           case when s.dag_hash = any($7::text[]) then null else s.data -> 'dag' -> 'timetable' end as timetable,
           case when s.dag_hash = any($7::text[]) or s.data is not null then null else s.data_compressed end as data_compressed
      from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
  ) as sd on true
  -- The queued assets as ids (a few bytes each; the process reads each id's name and uri once),
  -- no string of the condition bound and none of the queue's matched in SQL. Whether each is
  -- active only for a condition with a ref leaf (or one the process has not parsed yet).
  cross join lateral (
    select case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false) then array(select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) else '{}'::int[] end as queued,
           case when sd.dag_hash is not null and not coalesce(sd.dag_hash = any($8::text[]), false) and not coalesce(d.timetable_partitioned, false) and not coalesce(sd.dag_hash = any($9::text[]), false)
                then array(select q.asset_id from (select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
              union all select h.asset_id from (select dag_id, asset_id from consumer where kind = 'queued') as h where h.dag_id = d.dag_id) as q join asset a on a.id = q.asset_id
                            where not exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri))
                else '{}'::int[] end as inactive
  ) as queue_rows),
       (select count(*) from (select k.asset_id, k.dag_id from consumer k where k.kind = 'queued'
                   except select q.asset_id, q.target_dag_id from queued q) as k)
         > (select count(*) from (select k.asset_id, k.dag_id from consumer k where k.kind = 'queued'
                   except select q.asset_id, q.target_dag_id from queued q) as k
             where exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id));

-- airlock_lineage_facts_2234eca278b6
select ti.dag_id, ti.task_id, ti.map_index, ti.try_number,
      (extract(epoch from ti.end_date) * 1000000)::bigint::text as end_micros,
      (extract(epoch from coalesce(dr.logical_date, dr.run_after)) * 1000000)::bigint::text as run_micros,
      (extract(epoch from dr.data_interval_start) * 1000000)::bigint::text as interval_start_micros,
      (extract(epoch from dr.data_interval_end) * 1000000)::bigint::text as interval_end_micros,
      dr.clear_number,
      case when jsonb_typeof(dr.conf::jsonb -> 'openlineage') = 'object' then dr.conf::jsonb -> 'openlineage' end as conf_openlineage,
      coalesce((select json_agg(json_build_object('name', a.name, 'uri', a.uri) order by e.id)
                  from (select distinct (jsonb_array_elements_text(l.extra::jsonb -> 'airlock' -> 'event_ids'))::int as id
                          from log l
                         where l.dag_id = ti.dag_id and l.task_id = ti.task_id and l.run_id = ti.run_id
                           and l.map_index = ti.map_index and l.try_number = ti.try_number
                           and l.event in ('success', 'airlock.replay-events') and l.extra like '{%"airlock"%') as named
                  -- From the audit rows' ids to the events, by key: never a pass over asset_event.
                  cross join lateral (select e.id, e.asset_id from asset_event e where e.id = named.id) as e
                  join asset a on a.id = e.asset_id), '[]'::json) as outputs,
      ti.dag_version_id::text as dag_version_id,
      (select sd.dag_hash from serialized_dag sd where sd.dag_version_id = ti.dag_version_id limit 1) as dag_hash
 from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
where ti.id = $1::uuid;

-- airlock_lineage_serialized_dag_6c2d10a0fe68
select data::text as data, data_compressed from serialized_dag where dag_version_id = $1::uuid limit 1;

-- airlock_airlock_completions_3d4799d45c19
select ti.id
  from log l
  join task_instance ti
    on ti.dag_id = l.dag_id and ti.run_id = l.run_id and ti.task_id = l.task_id
   and ti.map_index = l.map_index and ti.try_number = l.try_number
 where l.event = 'success' and l.extra like '{%"airlock"%'
   and l.dttm >= $1::timestamptz and l.dttm < $2::timestamptz
   and ($3::text is null or l.dag_id = $3::text)
   and ti.state = 'success'
   and not exists (select 1 from log u
where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
  and u.event = 'airlock.undo'
  and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text)
 order by l.dttm, ti.id;

-- airlock_insert_log_4d18242dc1d2
insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
values (clock_timestamp(), $1, $2, $3, $4::int, $5::int, $6, $7::timestamptz, $8, $9)
returning id;

-- airlock_log_exists_bf1d39573d1b
select 1 from log where id = $1;

-- airlock_missing_outlets_041e9f5047bb
with ti as materialized (
     select least(t.queued_dttm, t.scheduled_dttm, t.start_date) as earliest, t.start_date, coalesce((select max(coalesce(h.updated_at, h.end_date, h.start_date)) from task_instance_history h
   where h.dag_id = $2 and h.run_id = $3 and h.task_id = $4 and h.map_index = $5::int
     and h.try_number < $6::int), '-infinity') as began from task_instance t
      where t.dag_id = $2 and t.run_id = $3 and t.task_id = $4 and t.map_index = $5::int
   ), outlets as (
     select a.asset_id, case when exists (
  select 1 from log l
   where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.map_index = $5::int
     and l.try_number = $6::int and l.event in ('success', 'airlock.replay-events')
     and exists (
      select 1 from asset_event e
       -- log.extra is free text: read as JSON only on airlock's rows, and only the numbers its
       -- event_ids holds (a path query never fails on a missing key or a scalar, as expanding
       -- would). As an array the ids are probes of asset_event_pkey; joined as a set function,
       -- the planner hashed the whole asset_event table for every task instance.
       where e.id = any(array(
               select named.id::int
                 from jsonb_path_query(case when l.extra like '{%"airlock"%' then l.extra::jsonb end,
                                       '$.airlock.event_ids[*] ? (@.type() == "number")') as named(id)))
         and e.asset_id = a.asset_id
     and e.source_dag_id = $2 and e.source_run_id = $3 and e.source_task_id = $4
     and e.source_map_index = $5::int
     and e.id <> all($7::int[])
         -- Named by this try's row alone: a row of another try (or of none) naming it too is a conflict.
         and not exists (select 1 from log l where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.map_index = $5::int
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(e.id), false) else false end and l.try_number is distinct from $6::int)))
 then 'attributed'
 when exists (
  select 1 from (select case when cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end) = 1 and (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1] <= 1 then array[(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1], (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.map_index = $5::int
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(e.id), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and e."timestamp" >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end, case when b.began = '-infinity'::timestamptz then array[ti.start_date]::timestamptz[] else array[null, ti.start_date]::timestamptz[] end, case when b.began = '-infinity'::timestamptz then array[null]::timestamptz[] else array[b.began, null]::timestamptz[] end) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= e."timestamp" or u.i = cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)
           order by u.i limit 1) as s
) end as a
    from (select ti.began as began offset 0) as b
    join asset_event e
      on e.asset_id = a.asset_id
     and e.source_dag_id = $2 and e.source_run_id = $3 and e.source_task_id = $4
     and e.source_map_index = $5::int
     and e.id <> all($7::int[])
     and e."timestamp" > greatest(b.began, coalesce(ti.earliest - interval '1 day', '-infinity')) offset 0) as x where x.a[1] = $6::int)
 then 'attributed'
 when exists (
  select 1 from (select case when cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end) = 1 and (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1] <= 1 then array[(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1], (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)[cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.map_index = $5::int
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(e.id), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and e."timestamp" >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end, case when b.began = '-infinity'::timestamptz then array[ti.start_date]::timestamptz[] else array[null, ti.start_date]::timestamptz[] end, case when b.began = '-infinity'::timestamptz then array[null]::timestamptz[] else array[b.began, null]::timestamptz[] end) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= e."timestamp" or u.i = cardinality(case when b.began = '-infinity'::timestamptz then array[$6::int] else array[$6::int - 1, $6::int] end)
           order by u.i limit 1) as s
) end as a
    from (select ti.began as began offset 0) as b
    join asset_event e
      on e.asset_id = a.asset_id
     and e.source_dag_id = $2 and e.source_run_id = $3 and e.source_task_id = $4
     and e.source_map_index = $5::int
     and e.id <> all($7::int[])
     and e."timestamp" > greatest(b.began, coalesce(ti.earliest - interval '1 day', '-infinity')) offset 0) as x where x.a[1] is null and x.a[2] = $6::int)
 then 'unattributed'
 else 'none'
 end as state
       from unnest($1::int[]) as a(asset_id)
       left join ti on true
   ), missing as (
     select o.asset_id, o.state from outlets o where o.state <> 'attributed'
   )
   select (select coalesce(array_agg(m.asset_id order by m.asset_id), '{}') from missing m) as missing,
          (select coalesce(array_agg(m.asset_id order by m.asset_id), '{}') from missing m where m.state = 'unattributed') as doubtful,
          coalesce(ev.kind, 'unknown') as kind, ev.log_id, ev.event, ev.owner, ev.dttm
     from (select 1) as one left join lateral (select v.kind, l.id as log_id, l.event, l.owner, l.dttm
          from (select 1 as rank, 'worker_success' as kind, l.id as log_id from log l
        where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.id is distinct from $8::int and l.map_index = $5::int and l.try_number = $6::int and l.event = 'success' and not (coalesce(l.extra, '') like '{%"airlock":{%')
       union all
       select 2, 'airlock_events', l.id from log l
        where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.id is distinct from $8::int and l.map_index = $5::int and l.try_number = $6::int and l.event in ('success', 'airlock.replay-events') and l.extra like '{%"airlock":{%'
          and ((l.extra::jsonb -> 'airlock' ->> 'command') = 'replay-events' or coalesce((l.extra::jsonb -> 'airlock' ->> 'events')::int, -1) > 0)
          and not exists (select 1 from log u
   where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
     and u.event = 'airlock.undo'
     and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text)
       union all
       select 3, 'airlock_no_events', l.id from log l
        where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.id is distinct from $8::int and l.map_index = $5::int and l.try_number = $6::int and l.event = 'success' and l.extra like '{%"airlock":{%'
          and (l.extra::jsonb -> 'airlock' ->> 'command') like 'complete%' and coalesce((l.extra::jsonb -> 'airlock' ->> 'events')::int, -1) = 0
          and not exists (select 1 from log u
   where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
     and u.event = 'airlock.undo'
     and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text)
       union all
       select 4, 'marked_task', l.id from log l
        where l.dag_id = $2 and l.task_id = $4 and l.run_id = $3 and l.id is distinct from $8::int and l.event = 'patch_task_instance' and l.extra like '{%' and l.dttm > coalesce((select max(coalesce(h.updated_at, h.end_date, h.start_date)) from task_instance_history h
   where h.dag_id = $2 and h.run_id = $3 and h.task_id = $4 and h.map_index = $5::int
     and h.try_number < $6::int), '-infinity')
          and (l.extra::jsonb ->> 'new_state') = 'success'
          and coalesce(l.extra::jsonb ->> 'map_index', $5::int::text) = $5::int::text
       union all
       select 5, 'marked_group', l.id from log l
        where l.dag_id = $2 and l.task_id is null and l.run_id = $3 and l.event = 'patch_task_group_instances'
          and l.extra like '{%' and l.dttm > coalesce((select max(coalesce(h.updated_at, h.end_date, h.start_date)) from task_instance_history h
   where h.dag_id = $2 and h.run_id = $3 and h.task_id = $4 and h.map_index = $5::int
     and h.try_number < $6::int), '-infinity') and (l.extra::jsonb ->> 'new_state') = 'success'
          and starts_with($4, (l.extra::jsonb ->> 'group_id') || '.')
       union all
       select 6, 'marked_run', l.id from log l
        where l.dag_id = $2 and l.task_id is null and l.run_id = $3 and l.event = 'patch_dag_run'
          and l.extra like '{%' and l.dttm > coalesce((select max(coalesce(h.updated_at, h.end_date, h.start_date)) from task_instance_history h
   where h.dag_id = $2 and h.run_id = $3 and h.task_id = $4 and h.map_index = $5::int
     and h.try_number < $6::int), '-infinity') and (l.extra::jsonb ->> 'state') = 'success'
       union all
       select 7, 'dags_test', null from dag_run r
        where r.dag_id = $2 and r.run_id = $3 and r.triggered_by = 'test') as v left join log l on l.id = v.log_id
         order by v.rank limit 1) as ev on true;

-- airlock_dag_ids_9b5ffd60c944
select dag_id from dag order by dag_id;

-- airlock_unknown_run_ids_5f1a149ee6f5
select id from unnest($2::text[]) as named(id)
where not exists (select 1 from dag_run d where d.run_id = named.id and ($1::text is null or d.dag_id = $1));

-- airlock_unknown_task_ids_0e3fdd2ab4aa
select id from unnest($2::text[]) as named(id)
where not exists (select 1 from task_instance t where t.task_id = named.id and ($1::text is null or t.dag_id = $1));

-- airlock_run_id_candidates_47f3211c46cf
select run_id as id from dag_run where $1::text is null or dag_id = $1 group by run_id limit 5000;

-- airlock_task_id_candidates_fef37ace32e6
select task_id as id from task_instance where $1::text is null or dag_id = $1 group by task_id limit 5000;

-- airlock_events_from_dag_3df72276bbf8
select exists (select 1 from asset_event where source_dag_id = $1) as found;

-- airlock_latest_serialized_dag_78bbaee00563
select sd.data, sd.data_compressed
 from serialized_dag sd left join dag_version dv on dv.id = sd.dag_version_id
where sd.dag_id = $1
order by sd.created_at desc, dv.version_number desc nulls last
limit 1;

-- airlock_version_serialized_dag_0d71b9cb4f1a
select data, data_compressed from serialized_dag where dag_version_id = $1::uuid limit 1;

-- airlock_clear_run_0a3fcb9d44f2
select dr.id, dr.state, dr.bundle_version, dr.created_dag_version_id::text as created_dag_version_id
from dag_run dr where dr.id = $1;

-- airlock_clear_run_lock_ec38cca25a76
select dr.id, dr.state, dr.bundle_version, dr.created_dag_version_id::text as created_dag_version_id
from dag_run dr where dr.id = $1 for update of dr;

-- airlock_clear_targets_983d39ea2da1
select ti.id::text as id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.operator,
      ti.dag_version_id::text as dag_version_id
 from task_instance ti
where ti.dag_id = $1 and ti.run_id = $2 and ti.state in ('failed', 'upstream_failed')
  and ti.task_id <> $3 and ($4::text[] is null or ti.task_id = any($4::text[]))
order by ti.task_id, ti.map_index;

-- airlock_clear_targets_lock_edff443fe7d6
select ti.id::text as id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.operator,
      ti.dag_version_id::text as dag_version_id
 from task_instance ti
where ti.dag_id = $1 and ti.run_id = $2 and ti.state in ('failed', 'upstream_failed')
  and ti.task_id <> $3 and ($4::text[] is null or ti.task_id = any($4::text[]))
order by ti.task_id, ti.map_index for update of ti;

-- airlock_clear_ti_820e2dde15e2
update task_instance ti
      set id = encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6),
                52, 1), 53, 1), 'hex')::uuid,
          state = null,
          max_tries = case when t.retries is null then greatest(ti.max_tries, ti.try_number) else ti.try_number + t.retries end,
          external_executor_id = null, next_method = null, next_kwargs = null, updated_at = clock_timestamp()
     from unnest($1::uuid[], $2::int[]) as t(id, retries)
    where ti.id = t.id
returning t.id::text as old_id, ti.id::text as new_id;

-- airlock_requeue_dag_run_76b23a6b0ad0
update dag_run
      set state = 'queued', queued_at = clock_timestamp(), start_date = null, end_date = null,
          last_scheduling_decision = null, clear_number = clear_number + 1, updated_at = clock_timestamp()
    where id = $1 and state in ('success', 'failed')
returning state;

-- airlock_touch_active_dag_run_ebc40828113a
update dag_run set queued_at = clock_timestamp(), clear_number = clear_number + 1, updated_at = clock_timestamp()
    where id = $1 and state in ('queued', 'running')
returning state;

-- airlock_record_clear_image_1042343bbf35
update log
  set extra = replace(extra, $2, coalesce(($3::jsonb || jsonb_build_object('left', jsonb_build_object(
        'task_instances', coalesce((select jsonb_agg(to_jsonb(t) order by t.task_id, t.map_index) from (
            select ti.id, ti.task_id, ti.map_index, ti.try_number, ti.state, ti.updated_at
              from task_instance ti where ti.id = any($4::uuid[])) as t), '[]'::jsonb),
        'dag_run', (select to_jsonb(d) from (select id, state, clear_number, updated_at from dag_run where id = $5::int) as d))))::text, 'null'))
where id = $1;

-- airlock_events_by_id_80fb6e03c7eb
select e.id, e.asset_id, a.name as asset_name, a.uri as asset_uri, e.extra::text as extra,
      e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
      e.partition_key as partition_key, e."timestamp",
      coalesce((select array_agg(l.alias_id order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '{}') as alias_ids,
      dr.logical_date, d.owners
 from asset_event e
 join asset a on a.id = e.asset_id
 left join dag_run dr on dr.dag_id = e.source_dag_id and dr.run_id = e.source_run_id
 left join dag d on d.dag_id = e.source_dag_id
where e.id = any($1::int[])
order by e.id;

-- airlock_resolve_assets_2594237a2511
select a.id, a.name, a.uri from asset a join unnest($1::text[], $2::text[]) as k(name, uri) on a.name = k.name and a.uri = k.uri;

-- airlock_resolve_aliases_021c1bdd67f0
select id, name from asset_alias where name = any($1::text[]);

-- airlock_event_content_lock_1cf7cff318ce
select pg_advisory_xact_lock(hashtextextended($1, 0));

-- airlock_find_matching_event_e85eb0eb0749
select id from asset_event
where asset_id = $1 and extra::jsonb = $2::jsonb
  and source_dag_id is not distinct from $3 and source_run_id is not distinct from $4
  and source_task_id is not distinct from $5 and source_map_index is not distinct from $6::int
  and "timestamp" >= $7::timestamptz
  and partition_key is not distinct from $8
order by id limit 1;

-- airlock_insert_event_copy_240969e06099
insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp", partition_key)
values ($1, $2::json, $3, $4, $5, $6::int, clock_timestamp(), $7)
returning id;

-- airlock_event_try_de9930a9cd35
select case when f.numbers is not null
               then (case when cardinality(f.numbers) = 1 and (f.numbers)[1] <= 1 then array[(f.numbers)[1], (f.numbers)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (f.numbers)[cardinality(f.numbers)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = $1 and l.task_id = $3 and l.run_id = $2 and l.map_index = $4::int
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb($5::int), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and $6::timestamptz >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(f.numbers, f.starts, f.last_writes) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= $6::timestamptz or u.i = cardinality(f.numbers)
           order by u.i limit 1) as s
) end)[1]
          end as try_number
     from (select array_agg(t.try_number order by t.try_number) as numbers, array_agg(t.start_date order by t.try_number) as starts, array_agg(t.last_write order by t.try_number) as last_writes
             from (select h.dag_id, h.run_id, h.task_id, h.map_index, h.try_number,
              case when c.state = 'success' or h.state = 'success' then 'success'
                   when c.state is null and exists (
                     select 1 from log l
                      where l.dag_id = h.dag_id and l.task_id = h.task_id and l.run_id = h.run_id
                        and l.map_index = h.map_index and l.try_number = h.try_number
                        and l.event = 'success' and l.extra like '{%"airlock":{%'
                        and (l.extra::jsonb -> 'airlock' -> 'before' -> 'task_instance' ->> 'id') <> h.task_instance_id::text
                        and not exists (select 1 from log u
   where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
     and u.event = 'airlock.undo'
     and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text))
                   then 'success'
                   else h.state
              end as state, h.start_date,
              coalesce(h.updated_at, h.end_date, h.start_date) as last_write
         from task_instance_history h
         left join task_instance c
           on c.dag_id = h.dag_id and c.task_id = h.task_id and c.run_id = h.run_id and c.map_index = h.map_index
          and c.try_number = h.try_number
        where h.dag_id = $1 and h.run_id = $2 and h.task_id = $3 and h.map_index = $4::int
       union all
       select t.dag_id, t.run_id, t.task_id, t.map_index, t.try_number, t.state, t.start_date,
              coalesce(t.updated_at, t.end_date, t.start_date)
         from task_instance t  where t.dag_id = $1 and t.run_id = $2 and t.task_id = $3 and t.map_index = $4::int
          and not exists (select 1 from task_instance_history x
                           where x.dag_id = t.dag_id and x.task_id = t.task_id and x.run_id = t.run_id
                             and x.map_index = t.map_index and x.try_number = t.try_number)) as t) as f;

-- airlock_count_events_5ca54fd6a235
select count(*) as n from asset_event where id = any($1::int[]);

-- airlock_lock_events_skip_locked_b8464b4a255d
select id from asset_event where id = any($1::int[]) order by id for update skip locked;

-- airlock_duplicates_of_kept_partitioned_22f280d5360f
with kept as (
     select e.*, coalesce(e.source_map_index, -1) as map_index, coalesce(e.partition_key, '') as partition_text, e.extra::jsonb as extra_jsonb,
            coalesce((select string_agg(l.alias_id::text, ',' order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '') as alias_text
       from asset_event e where e.id = $1
   ), f as (
     select array_agg(t.try_number order by t.try_number) as numbers, array_agg(t.start_date order by t.try_number) as starts, array_agg(t.last_write order by t.try_number) as last_writes
       from (select h.dag_id, h.run_id, h.task_id, h.map_index, h.try_number,
              case when c.state = 'success' or h.state = 'success' then 'success'
                   when c.state is null and exists (
                     select 1 from log l
                      where l.dag_id = h.dag_id and l.task_id = h.task_id and l.run_id = h.run_id
                        and l.map_index = h.map_index and l.try_number = h.try_number
                        and l.event = 'success' and l.extra like '{%"airlock":{%'
                        and (l.extra::jsonb -> 'airlock' -> 'before' -> 'task_instance' ->> 'id') <> h.task_instance_id::text
                        and not exists (select 1 from log u
   where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
     and u.event = 'airlock.undo'
     and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text))
                   then 'success'
                   else h.state
              end as state, h.start_date,
              coalesce(h.updated_at, h.end_date, h.start_date) as last_write
         from task_instance_history h
         left join task_instance c
           on c.dag_id = h.dag_id and c.task_id = h.task_id and c.run_id = h.run_id and c.map_index = h.map_index
          and c.try_number = h.try_number
        where (h.dag_id, h.run_id, h.task_id, h.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)
       union all
       select t.dag_id, t.run_id, t.task_id, t.map_index, t.try_number, t.state, t.start_date,
              coalesce(t.updated_at, t.end_date, t.start_date)
         from task_instance t  where (t.dag_id, t.run_id, t.task_id, t.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)
          and not exists (select 1 from task_instance_history x
                           where x.dag_id = t.dag_id and x.task_id = t.task_id and x.run_id = t.run_id
                             and x.map_index = t.map_index and x.try_number = t.try_number)) as t
   )
   select e.id from asset_event e, kept k, f
    where e.id <> k.id
      and e.asset_id = k.asset_id and e.source_dag_id = k.source_dag_id and e.source_run_id = k.source_run_id
      and e.source_task_id = k.source_task_id and coalesce(e.source_map_index, -1) = k.map_index
      and e.extra::jsonb = k.extra_jsonb and coalesce(e.partition_key, '') = k.partition_text
      and coalesce((select string_agg(l.alias_id::text, ',' order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '') = k.alias_text
      -- Both still of one try, by the audit's attribution as it holds now (a rerun since the
      -- audit read them can make one a later try's event, or unattributed: no longer a duplicate).
      and (case when cardinality(f.numbers) = 1 and (f.numbers)[1] <= 1 then array[(f.numbers)[1], (f.numbers)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (f.numbers)[cardinality(f.numbers)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = k.source_dag_id and l.task_id = k.source_task_id and l.run_id = k.source_run_id and l.map_index = k.map_index
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(e.id), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and e."timestamp" >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(f.numbers, f.starts, f.last_writes) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= e."timestamp" or u.i = cardinality(f.numbers)
           order by u.i limit 1) as s
) end)[1]
        = (case when cardinality(f.numbers) = 1 and (f.numbers)[1] <= 1 then array[(f.numbers)[1], (f.numbers)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (f.numbers)[cardinality(f.numbers)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = k.source_dag_id and l.task_id = k.source_task_id and l.run_id = k.source_run_id and l.map_index = k.map_index
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(k.id), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and k."timestamp" >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(f.numbers, f.starts, f.last_writes) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= k."timestamp" or u.i = cardinality(f.numbers)
           order by u.i limit 1) as s
) end)[1]
    order by e.id
      for key share of e skip locked;

-- airlock_events_named_by_success_row_d186a7de5078
select e.id from asset_event e
  where e.id = any($1::int[])
    and exists (
select 1 from log l
 where l.dag_id = e.source_dag_id and l.task_id = e.source_task_id and l.run_id = e.source_run_id and l.map_index = coalesce(e.source_map_index, -1)
   and l.event in ('success')
   and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(e.id), false) else false end);

-- airlock_lock_consumer_dags_partitioned_b9b004bb1fb4
with wanted as (
  select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any(array(select l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
), locked as (
  select d.dag_id, coalesce(d.timetable_partitioned, false) as partitioned
    from dag d where d.dag_id in (select dag_id from wanted)
   order by d.dag_id
     for share of d skip locked
)
select (select count(*)::int from wanted w join dag d on d.dag_id = w.dag_id) as wanted,
       (select count(*)::int from locked) as locked,
       coalesce((select bool_or(partitioned) from locked), false) as partitioned;

-- airlock_consumed_events_partitioned_a702758db45b
select event_id from dagrun_asset_event where event_id = any($1::int[]) union select asset_event_id from partitioned_asset_key_log where asset_event_id = any($1::int[]);

-- airlock_delete_events_acfa5d70bab1
with links as (select l.event_id, json_agg(l.alias_id order by l.alias_id) as alias_ids
                 from asset_alias_asset_event l where l.event_id = any($1::int[]) group by l.event_id),
     gone as (delete from asset_event where id = any($1::int[]) returning *)
-- Without its extra: free-form data the audit log's readers need not see. A duplicate's extra
-- equals its kept event's (sameAsKept), which is where an undo takes it from.
select gone.id, ((to_jsonb(gone) - 'extra') || jsonb_build_object('alias_ids', coalesce(links.alias_ids, '[]'::json)))::text as row
  from gone left join links on links.event_id = gone.id;

-- airlock_kept_event_declared_outlets_4b9c7f58e056
with kept as (select e.*, coalesce(e.source_map_index, -1) as map_index from asset_event e where e.id = $1),
        f as (select array_agg(t.try_number order by t.try_number) as numbers, array_agg(t.start_date order by t.try_number) as starts, array_agg(t.last_write order by t.try_number) as last_writes
                from (select h.dag_id, h.run_id, h.task_id, h.map_index, h.try_number,
              case when c.state = 'success' or h.state = 'success' then 'success'
                   when c.state is null and exists (
                     select 1 from log l
                      where l.dag_id = h.dag_id and l.task_id = h.task_id and l.run_id = h.run_id
                        and l.map_index = h.map_index and l.try_number = h.try_number
                        and l.event = 'success' and l.extra like '{%"airlock":{%'
                        and (l.extra::jsonb -> 'airlock' -> 'before' -> 'task_instance' ->> 'id') <> h.task_instance_id::text
                        and not exists (select 1 from log u
   where u.dag_id = l.dag_id and u.task_id = l.task_id and u.run_id = l.run_id and u.map_index = l.map_index
     and u.event = 'airlock.undo'
     and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = l.id::text))
                   then 'success'
                   else h.state
              end as state, h.start_date,
              coalesce(h.updated_at, h.end_date, h.start_date) as last_write
         from task_instance_history h
         left join task_instance c
           on c.dag_id = h.dag_id and c.task_id = h.task_id and c.run_id = h.run_id and c.map_index = h.map_index
          and c.try_number = h.try_number
        where (h.dag_id, h.run_id, h.task_id, h.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)
       union all
       select t.dag_id, t.run_id, t.task_id, t.map_index, t.try_number, t.state, t.start_date,
              coalesce(t.updated_at, t.end_date, t.start_date)
         from task_instance t  where (t.dag_id, t.run_id, t.task_id, t.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)
          and not exists (select 1 from task_instance_history x
                           where x.dag_id = t.dag_id and x.task_id = t.task_id and x.run_id = t.run_id
                             and x.map_index = t.map_index and x.try_number = t.try_number)) as t),
        try as (select (case when cardinality(f.numbers) = 1 and (f.numbers)[1] <= 1 then array[(f.numbers)[1], (f.numbers)[1], 3]
else (
  select case
           -- A row naming it with no try: a copy of an event whose own try could not be told.
           when n.untried then array[null, (f.numbers)[cardinality(f.numbers)], 6]
           when n.tries = 1 then array[n.first_try, n.first_try, 1]
           when n.tries > 1 then array[null, n.last_try, 5]
           when s.in_window then array[s.try_number, s.try_number, 2]
           when s.first then array[s.try_number, s.try_number, 3]
           else array[null, s.try_number, 4]
         end
    from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                 coalesce(bool_or(l.try_number is null), false) as untried
            from log l where l.dag_id = k.source_dag_id and l.task_id = k.source_task_id and l.run_id = k.source_run_id and l.map_index = k.map_index
     and l.event in ('success', 'airlock.replay-events')
     and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(k.id), false) else false end) as n,
         -- The try whose span the stamp falls in: the first whose last write is not before it,
         -- else the last try; in its window when it started after the tries before it ended
         -- (tries without any timestamp bound nothing, as in tryBegan).
         (select u.try_number, u.i = 1 or u.before is null as first,
                 u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and k."timestamp" >= u.start_date as in_window
            from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                    from unnest(f.numbers, f.starts, f.last_writes) with ordinality as x(try_number, start_date, last_write, i)) as u
           where u.last_write >= k."timestamp" or u.i = cardinality(f.numbers)
           order by u.i limit 1) as s
) end)[1] as try_number
                  from kept k, f)
   select a.name, a.uri, k.source_task_id as task_id, array(select distinct v.dag_version_id::text
                from (select t.dag_version_id from task_instance t where t.dag_id = k.source_dag_id and t.run_id = k.source_run_id and t.task_id = k.source_task_id and t.map_index = k.map_index and t.try_number = try.try_number
                      union all
                      select h.dag_version_id from task_instance_history h where h.dag_id = k.source_dag_id and h.run_id = k.source_run_id and h.task_id = k.source_task_id and h.map_index = k.map_index and h.try_number = try.try_number) as v
               where v.dag_version_id is not null order by 1) as dag_version_ids
     from kept k join asset a on a.id = k.asset_id, try;

-- airlock_serialized_dags_of_versions_fe36669f3909
select dag_version_id::text as id, data, data_compressed from serialized_dag where dag_version_id = any($1::uuid[]);

-- airlock_audit_records_e413ce2bf457
select id, dttm, logical_date, event, dag_id, run_id, task_id, map_index, try_number, owner, extra from log where id = any($1::int[]) order by id;

-- airlock_audit_record_window_56d7bbf26fcb
select id, dttm, logical_date, event, dag_id, run_id, task_id, map_index, try_number, owner, extra from log
where dttm >= $1::timestamptz and dttm < $2::timestamptz and event = any($3::text[])
  and extra like '%"airlock":{%'
  and ($4::text is null or owner = $4)
  and (cardinality($5::text[]) = 0 or dag_id = any($5::text[]))
  and (cardinality($6::text[]) = 0 or run_id = any($6::text[]))
  and (cardinality($7::text[]) = 0 or task_id = any($7::text[]))
order by id desc
limit $8;

-- airlock_find_undo_of_7d18092de529
select id from log
where event = $1
  and (case when event = $1 then (extra::jsonb -> 'airlock' ->> 'undoes') end) = $2::int::text
  and id is distinct from $3::int
order by id limit 1;

-- airlock_lock_event_consumers_partitioned_02741bfa3617
with wanted as (
  select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any(array(select l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
), locked as (
  select d.dag_id, coalesce(d.timetable_partitioned, false) as partitioned
    from dag d where d.dag_id in (select dag_id from wanted)
   order by d.dag_id
     for share of d skip locked
)
select (select count(*)::int from wanted w join dag d on d.dag_id = w.dag_id) as wanted,
       (select count(*)::int from locked) as locked,
       array(select dag_id from locked where partitioned order by 1) as partitioned,
       array(select distinct e.asset_id from asset_event e where e.id = any($1::int[]) order by 1) as asset_ids,
       array(select distinct l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[]) order by 1) as alias_ids;

-- airlock_read_event_consumers_partitioned_56b9716d38ab
with wanted as (
  select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any(array(select l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
  union
  select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any(array(select e.asset_id from asset_event e where e.id = any($1::int[])))
), locked as (
  select d.dag_id, coalesce(d.timetable_partitioned, false) as partitioned
    from dag d where d.dag_id in (select dag_id from wanted)
   order by d.dag_id
)
select (select count(*)::int from wanted w join dag d on d.dag_id = w.dag_id) as wanted,
       (select count(*)::int from locked) as locked,
       array(select dag_id from locked where partitioned order by 1) as partitioned,
       array(select distinct e.asset_id from asset_event e where e.id = any($1::int[]) order by 1) as asset_ids,
       array(select distinct l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[]) order by 1) as alias_ids;

-- airlock_consuming_runs_partitioned_5ab0ca49eca3
select c.event_id, r.dag_id, r.run_id from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id
 where c.event_id = any($1::int[])
union all
select l.asset_event_id, l.target_dag_id, null from partitioned_asset_key_log l where l.asset_event_id = any($1::int[])
 order by 1, 2, 3;

-- airlock_undo_delete_events_523ae91db876
delete from asset_event where id = any($1::int[]) returning id, asset_id;

-- airlock_undo_delete_queue_rows_624731d42c20
with created as (
  select q.target_dag_id as dag_id, q.asset_id, q.created_at
    from asset_dag_run_queue q
   where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
), needed as (
  select c.dag_id, c.asset_id, min(e.timestamp) as first_pending
    from created c
    join asset_event e on e.asset_id = c.asset_id and e.id <> all($3::int[]) and e.timestamp >= c.created_at
   where e.timestamp > coalesce((select max(r.run_after) from dag_run r
                                  where r.dag_id = c.dag_id and r.run_type = 'asset_triggered'), '-infinity')
   group by c.dag_id, c.asset_id
), kept as (
  update asset_dag_run_queue q set created_at = n.first_pending
    from needed n where q.target_dag_id = n.dag_id and q.asset_id = n.asset_id
  returning q.target_dag_id as dag_id, q.asset_id
), gone as (
  delete from asset_dag_run_queue q using created c
   where q.target_dag_id = c.dag_id and q.asset_id = c.asset_id
     and not exists (select 1 from needed n where n.dag_id = c.dag_id and n.asset_id = c.asset_id)
  returning q.target_dag_id as dag_id, q.asset_id
)
select 'deleted' as kind, dag_id, asset_id from gone
union all
select 'kept', dag_id, asset_id from kept
 order by 1, 2, 3;

-- airlock_undo_queue_effect_per_asset_239a83fda5c8
with created as (
  select q.target_dag_id as dag_id, q.asset_id, q.created_at
    from asset_dag_run_queue q
   where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
), kept as (
  select c.dag_id, c.asset_id
    from created c
    join asset_event e on e.asset_id = c.asset_id and e.id <> all($3::int[]) and e.timestamp >= c.created_at
   where e.timestamp > coalesce((select max(r.run_after) from dag_run r
                                  where r.dag_id = c.dag_id and r.run_type = 'asset_triggered'), '-infinity')
   group by c.dag_id, c.asset_id
), gone as (
  select c.dag_id, c.asset_id from created c
   where not exists (select 1 from kept k where k.dag_id = c.dag_id and k.asset_id = c.asset_id)
), lost as (
  select distinct g.dag_id, al.name
    from gone g
    join asset_alias_asset l on l.asset_id = g.asset_id
    join asset_alias al on al.id = l.alias_id
   where not exists (select 1 from asset_dag_run_queue q join asset_alias_asset o on o.asset_id = q.asset_id
                      where q.target_dag_id = g.dag_id and o.alias_id = l.alias_id
                        and not exists (select 1 from gone n where n.dag_id = q.target_dag_id and n.asset_id = q.asset_id))
)
select 'deleted' as kind, dag_id, asset_id, null::varchar as alias from gone
union all
select 'kept', dag_id, asset_id, null from kept
union all
select 'alias', dag_id, null, name from lost
 order by 1, 2, 3, 4;

-- airlock_undo_write_queue_rows_per_asset_530b5501ce7e
select json_build_object('dag_id', q.target_dag_id, 'asset_id', q.asset_id, 'created_at', q.created_at) as row
 from asset_dag_run_queue q
where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
order by q.target_dag_id, q.asset_id;

-- airlock_undo_withdraw_event_queue_rows_f488c986adf8
delete from asset_dag_run_queue q where q.asset_event_id = any($1::int[])
returning q.target_dag_id as dag_id, q.asset_id;

-- airlock_undo_queue_rows_unrestorable_ae3789ba41e0
select format('%s/asset %s: %s', b.dag_id, b.asset_id,
             case when not exists (select 1 from dag d where d.dag_id = b.dag_id) then 'the DAG is gone'
                  when not exists (select 1 from asset a where a.id = b.asset_id) then 'the asset is gone'
                  when not exists (select 1 from asset_event e where e.asset_id = b.asset_id and e.id = any($2::int[])
                                      and (b.event_id is null or e.id = b.event_id))
                    then 'its events are gone'
                  else 'a run of it consumed the events since' end) as problem
 from json_to_recordset($1::json) as b(dag_id text, asset_id int, created_at timestamptz, event_id int)
where not exists (select 1 from dag d where d.dag_id = b.dag_id)
   or not exists (select 1 from asset a where a.id = b.asset_id)
   or not exists (select 1 from asset_event e where e.asset_id = b.asset_id and e.id = any($2::int[])
                     and (b.event_id is null or e.id = b.event_id))
   or exists (select 1 from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id
               join asset_event e on e.id = c.event_id
              where r.dag_id = b.dag_id and e.asset_id = b.asset_id and c.event_id = any($2::int[]))
order by 1;

-- airlock_undo_restore_queue_rows_per_asset_124d153ffb21
insert into asset_dag_run_queue as q (asset_id, target_dag_id, created_at)
select b.asset_id, b.dag_id, b.created_at
  from json_to_recordset($1::json) as b(dag_id text, asset_id int, created_at timestamptz)
 order by b.asset_id, b.dag_id
on conflict (asset_id, target_dag_id) do update set created_at = least(q.created_at, excluded.created_at)
returning q.target_dag_id as dag_id, q.asset_id;

-- airlock_undo_compare_ti_cc09b1b34f3e
select ti.xmin = l.xmin as same, ti.state, ti.try_number
 from task_instance ti, log l
where ti.id = $1::uuid and l.id = $2::int;

-- airlock_undo_restore_ti_4b6eb0628a7d
update task_instance ti
      set state = b.state, start_date = b.start_date, end_date = b.end_date, duration = b.duration,
          updated_at = b.updated_at, next_method = b.next_method
     from json_populate_record(null::task_instance, $2::json) as b
    where ti.id = $1::uuid
returning ti.id;

-- airlock_undo_moved_since_1d7483cf2d59
select format('%s[%s] is %s since', ti.task_id, ti.map_index, coalesce(ti.state, 'none')) as change
  from task_instance ti
 where ti.dag_id = $1 and ti.run_id = $2 and ti.id <> $3::uuid and ti.id <> all($5::uuid[])
   and ($4::text[] is null or ti.task_id = any($4::text[]))
   and ti.updated_at > (select c.updated_at from task_instance c where c.id = $3::uuid)
union all
select format('the run is %s since', coalesce(d.state, 'none')) from dag_run d
 where d.dag_id = $1 and d.run_id = $2
   and d.end_date >= (select c.updated_at from task_instance c where c.id = $3::uuid)
 order by 1;

-- airlock_undo_restore_events_2f0b4e21385e
with kept as (
  select extra from asset_event where id = $2::int
), rows as (
  select (r.row::jsonb || jsonb_build_object('extra', (select extra from kept)))::json as row, (r.row ->> 'id')::int as id
    from json_array_elements($1::json) as r(row)
   where exists (select 1 from kept)
), back as (
  insert into asset_event
  select (json_populate_record(null::asset_event, rows.row)).* from rows
  on conflict (id) do nothing
  returning id
), links as (
  insert into asset_alias_asset_event (alias_id, event_id)
  select a.alias_id::int, rows.id from rows join back on back.id = rows.id,
         json_array_elements_text(coalesce(rows.row -> 'alias_ids', '[]'::json)) as a(alias_id)
   where exists (select 1 from asset_alias al where al.id = a.alias_id::int)
)
select id from back order by id;

-- airlock_undo_lock_cleared_db9dede30db7
select id from task_instance where id = any($1::uuid[]) order by task_id, map_index for update;

-- airlock_undo_lock_cleared_run_8a6dfc055b00
select id from dag_run where id = $1::int for update;

-- airlock_undo_compare_cleared_8b910e658f5f
select format('%s[%s] %s', l.task_id, l.map_index,
              case when ti.id is null then 'has another id now (cleared again, or retried)'
                   else 'changed (' || array_to_string(array_remove(array[
                          case when ti.state is distinct from l.state then 'state, now ' || coalesce(ti.state, 'none') end,
                          case when ti.try_number is distinct from l.try_number then 'try_number' end,
                          case when ti.updated_at is distinct from l.updated_at then 'updated_at' end], null), ', ') || ')' end) as change
  from json_populate_recordset(null::task_instance, $1::json) as l
  left join task_instance ti on ti.id = l.id
 where ti.id is null or ti.state is distinct from l.state or ti.try_number is distinct from l.try_number
    or ti.updated_at is distinct from l.updated_at
union all
select format('the run changed (%s)', array_to_string(array_remove(array[
         case when d.state is distinct from l.state then 'state, now ' || coalesce(d.state, 'none') end,
         case when d.clear_number is distinct from l.clear_number then 'clear_number' end,
         case when d.updated_at is distinct from l.updated_at then 'updated_at' end], null), ', '))
  from json_populate_record(null::dag_run, $2::json) as l join dag_run d on d.id = l.id
 where d.state is distinct from l.state or d.clear_number is distinct from l.clear_number
    or d.updated_at is distinct from l.updated_at;

-- airlock_undo_restore_cleared_e64ff8e9c517
update task_instance ti
  set id = b.id, state = b.state, max_tries = b.max_tries, external_executor_id = b.external_executor_id,
      next_method = b.next_method, updated_at = b.updated_at
 from json_populate_recordset(null::task_instance, $1::json) as b
 join json_populate_recordset(null::task_instance, $2::json) as l on l.task_id = b.task_id and l.map_index = b.map_index
where ti.id = l.id;

-- airlock_undo_unarchive_cleared_a5ebf1255227
delete from task_instance_history h using json_populate_recordset(null::task_instance, $1::json) as b
where h.task_instance_id = b.id and h.try_number = b.try_number;

-- airlock_undo_restore_reschedules_abfae6ca89e0
insert into task_reschedule select (json_populate_record(null::task_reschedule, r)).* from json_array_elements($1::json) as r;

-- airlock_undo_restore_run_145ec41cac0c
update dag_run d
  set state = b.state, queued_at = b.queued_at, start_date = b.start_date, end_date = b.end_date,
      last_scheduling_decision = b.last_scheduling_decision, clear_number = b.clear_number, updated_at = b.updated_at
 from json_populate_record(null::dag_run, $1::json) as b
where d.id = b.id;

-- airlock_latest_jobs_b6ebf976748b
select distinct on (job_type) id, job_type, state, latest_heartbeat, hostname
 from job
where job_type = any($1::text[])
order by job_type, case state when 'running' then 0 else 1 end, latest_heartbeat desc;

-- airlock_explain_dag_page_all_partitioned_7e5e49c0e442
select d.dag_id from (
  (select r.dag_id from dag_schedule_asset_reference r where r.dag_id > $1 group by r.dag_id order by r.dag_id limit $2)
  union (select r.dag_id from dag_schedule_asset_alias_reference r where r.dag_id > $1 group by r.dag_id order by r.dag_id limit $2)
  union (select r.dag_id from dag_schedule_asset_name_reference r where r.dag_id > $1 group by r.dag_id order by r.dag_id limit $2)
  union (select r.dag_id from dag_schedule_asset_uri_reference r where r.dag_id > $1 group by r.dag_id order by r.dag_id limit $2)
  union (select p.dag_id from dag p where p.dag_id > $1 and p.timetable_partitioned order by p.dag_id limit $2)
) as s
join dag d on d.dag_id = s.dag_id
order by d.dag_id
limit $2;

-- airlock_explain_dag_page_c62ca45be8a5
select d.dag_id from dag d
where d.dag_id > $1
  and case $2::text when 'dags' then d.dag_id = any($4::text[])
                    else d.dag_id in (select r.dag_id from dag_schedule_asset_reference r join asset a on a.id = r.asset_id
                  where a.name = any($3::text[]) or a.uri = any($3::text[])
           union select r.dag_id from dag_schedule_asset_name_reference r where r.name = any($3::text[])
           union select r.dag_id from dag_schedule_asset_uri_reference r where r.uri = any($3::text[])
           union select r.dag_id from dag_schedule_asset_alias_reference r
                   join asset_alias_asset l on l.alias_id = r.alias_id join asset a on a.id = l.asset_id
                  where a.name = any($3::text[]) or a.uri = any($3::text[])) end
order by d.dag_id
limit $5;

-- airlock_explain_dags_partitioned_flag_per_asset_01f3a0bc5442
select d.dag_id, d.is_paused is not false as paused, d.is_stale is not false as stale,
      d.has_import_errors is not false as import_errors, d.max_active_runs,
      d.asset_expression is not null as has_asset_expression,
      (select count(*)::int from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')) as active_runs,
      d.exceeds_max_non_backfill is true as max_runs_flag, coalesce(d.timetable_partitioned, false) as partitioned,
      sd.timetable, sd.catchup, encode(sd.data_compressed, 'base64') as data_compressed, sd.dag_hash is not null as serialized,
      coalesce((select json_agg(json_build_object(
                  'asset_id', q.asset_id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null,
                  'created_at', q.created_at, 'event', (select json_build_object('id', e.id, 'timestamp', e."timestamp", 'source_dag_id', e.source_dag_id, 'source_run_id', e.source_run_id, 'source_task_id', e.source_task_id, 'source_map_index', e.source_map_index) from (select e.* from asset_event e where e.asset_id = q.asset_id and e."timestamp" <= q.created_at
    order by e."timestamp" desc, e.id desc limit 1) as e))
                order by q.created_at, q.asset_id)
                 from asset_dag_run_queue q
                 left join asset a on a.id = q.asset_id
                 left join asset_active aa on aa.name = a.name and aa.uri = a.uri
                where q.target_dag_id = d.dag_id), '[]') as queue
 from dag d
 -- The latest serialized DAG, as the scheduler loads it (SerializedDagModel by created_at).
 left join lateral (
   select s.dag_hash, s.data -> 'dag' -> 'timetable' as timetable, (s.data -> 'dag' ->> 'catchup') = 'true' as catchup,
          case when s.data is null then s.data_compressed end as data_compressed
     from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
 ) as sd on true
where d.dag_id = any($1::text[])
order by d.dag_id;

-- airlock_explain_assets_1a76c4aa932f
select a.id, a.name, a.uri, aa.name is not null as active
 from asset a
 left join asset_active aa on aa.name = a.name and aa.uri = a.uri
where a.id in (select n.id from asset n where n.name in (select unnest($1::text[]))
               union all
               select u.id from asset u where u.uri in (select unnest($2::text[])))
order by a.id;

-- airlock_explain_aliases_8b1970077bc1
select al.name,
      array(select l.asset_id from asset_alias_asset l where l.alias_id = al.id order by 1) as asset_ids,
      (select json_build_object('id', e.id, 'timestamp', e."timestamp", 'source_dag_id', e.source_dag_id, 'source_run_id', e.source_run_id, 'source_task_id', e.source_task_id, 'source_map_index', e.source_map_index) from asset_alias_asset_event l join asset_event e on e.id = l.event_id
        where l.alias_id = al.id order by e."timestamp" desc, e.id desc limit 1) as last_event
 from asset_alias al
where al.name = any($1::text[])
order by al.name;

-- airlock_explain_assets_by_id_6f4c56612d20
select a.id, a.name, a.uri, aa.name is not null as active
 from asset a
 left join asset_active aa on aa.name = a.name and aa.uri = a.uri
where a.id = any($1::int[])
order by a.id;

-- airlock_explain_last_events_0d3afc452b00
select a.id as asset_id,
     (select json_build_object('id', e.id, 'timestamp', e."timestamp", 'source_dag_id', e.source_dag_id, 'source_run_id', e.source_run_id, 'source_task_id', e.source_task_id, 'source_map_index', e.source_map_index) from asset_event e where e.asset_id = a.id order by e."timestamp" desc, e.id desc limit 1) as event
from unnest($1::int[]) as a(id);

-- airlock_explain_runs_749ba30d02ef
select d.dag_id, r.run_id, r.state, r.run_after, r.queued_at,
      array(select c.event_id from dagrun_asset_event c where c.dag_run_id = r.id order by 1) as event_ids
 from unnest($1::text[]) as d(dag_id)
 cross join lateral (
   select r.* from dag_run r where r.dag_id = d.dag_id and r.run_type = 'asset_triggered'
    order by r.run_after desc, r.id desc limit $2
 ) as r
order by d.dag_id, r.run_after desc, r.id desc;

-- airlock_explain_consumed_ebcad8394a3b
select r.dag_id, c.event_id, r.run_id
 from dagrun_asset_event c
 join dag_run r on r.id = c.dag_run_id
where c.event_id = any($1::int[]) and r.dag_id = any($2::text[])
order by r.dag_id, c.event_id, r.run_after, r.id;

-- airlock_explain_producers_78d358537541
select t.asset_id, t.dag_id, t.task_id,
      d.is_paused is not false as paused, d.is_stale is not false as stale,
      d.has_import_errors is not false as import_errors,
      lr.run_id as latest_run_id, lr.state as latest_run_state
 from task_outlet_asset_reference t
 left join dag d on d.dag_id = t.dag_id
 left join lateral (
   select r.run_id, r.state from dag_run r where r.dag_id = t.dag_id
    order by r.run_after desc, r.id desc limit 1
 ) as lr on true
where t.asset_id = any($1::int[])
order by t.asset_id, t.dag_id, t.task_id;

-- airlock_explain_windows_aliases_c2015bfeb3bf
with d as (
  select d.dag_id, d.catchup, t.triggered,
         (select max(r.run_after) from dag_run r
           where r.dag_id = d.dag_id and r.run_type = 'asset_triggered'
             and r.run_after < coalesce(t.triggered, 'infinity')) as previous
    from unnest($1::text[], $2::boolean[]) as d(dag_id, catchup)
    cross join lateral (
      select max(q.created_at) as triggered from asset_dag_run_queue q where q.target_dag_id = d.dag_id
    ) as t
), w as (
  select d.*, coalesce(d.previous,  '-infinity'::timestamptz) as after from d
), ev as (
  select w.dag_id, x.id, x."timestamp", x.source_dag_id, x.source_run_id, x.source_task_id, x.source_map_index,
         w.triggered is not null and x."timestamp" <= w.triggered as consumed,
         x."timestamp" > coalesce(w.triggered, w.previous, '-infinity')
           and (exists (select 1 from dag_schedule_asset_reference r
                         where r.dag_id = w.dag_id and r.asset_id = x.asset_id and r.created_at < x."timestamp")
                or exists (select 1 from asset_alias_asset_event l
                                    join dag_schedule_asset_alias_reference r on r.alias_id = l.alias_id
                                   where l.event_id = x.id and r.dag_id = w.dag_id and r.created_at < x."timestamp")) as stranded
    from w
    cross join lateral (
      select e.id from asset_event e
       where e.asset_id in (select r.asset_id from dag_schedule_asset_reference r where r.dag_id = w.dag_id)
         and e."timestamp" > w.after
      union
      select l.event_id from asset_alias_asset_event l
        join dag_schedule_asset_alias_reference r on r.alias_id = l.alias_id
       where r.dag_id = w.dag_id
    ) as ids
    join asset_event x on x.id = ids.id and x."timestamp" > w.after
)
select w.dag_id, to_char(w.triggered at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as triggered, to_char(nullif(w.after, '-infinity') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as after,
       to_char(w.previous at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as previous,
       (select count(*)::int from ev where ev.dag_id = w.dag_id and ev.consumed) as consumed_count,
       coalesce((select json_agg(j.event order by j."timestamp", j.id)
      from (select ev.id, ev."timestamp", json_build_object('id', ev.id, 'timestamp', ev."timestamp", 'source_dag_id', ev.source_dag_id, 'source_run_id', ev.source_run_id, 'source_task_id', ev.source_task_id, 'source_map_index', ev.source_map_index) as event from ev
             where ev.dag_id = w.dag_id and ev.consumed order by ev."timestamp", ev.id limit $3) as j), '[]') as consumed,
       (select count(*)::int from ev where ev.dag_id = w.dag_id and ev.stranded) as stranded_count,
       coalesce((select json_agg(j.event order by j."timestamp", j.id)
      from (select ev.id, ev."timestamp", json_build_object('id', ev.id, 'timestamp', ev."timestamp", 'source_dag_id', ev.source_dag_id, 'source_run_id', ev.source_run_id, 'source_task_id', ev.source_task_id, 'source_map_index', ev.source_map_index) as event from ev
             where ev.dag_id = w.dag_id and ev.stranded order by ev."timestamp", ev.id limit $3) as j), '[]') as stranded
  from w
 order by w.dag_id;

-- airlock_explain_partitions_3eaae3755b3a
select p.id, p.target_dag_id, p.partition_key, p.created_at,
      null as fingerprint,
      coalesce((select json_agg(json_build_object('asset_id', k.asset_id, 'source_keys', k.keys) order by k.asset_id)
                  from (select l.asset_id, array_agg(distinct l.source_partition_key order by l.source_partition_key) as keys
                          from partitioned_asset_key_log l
                         where l.asset_partition_dag_run_id = p.id

                         group by l.asset_id) as k), '[]') as received,
      (select max(l.created_at) from partitioned_asset_key_log l
        where l.asset_partition_dag_run_id = p.id) as last_received_at
 from asset_partition_dag_run p
where p.target_dag_id = any($1::text[]) and p.created_dag_run_id is null
order by p.target_dag_id, p.created_at, p.id;
